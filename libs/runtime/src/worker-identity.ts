import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** The lease owner name of this worker process. */
export const WORKER_ID = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
