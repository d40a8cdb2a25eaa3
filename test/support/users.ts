import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** Creates another caller through the operator CLI; returns its API key. */
export async function createUserKey(userName: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['dist/apps/api/src/cli.js', 'create-key', userName], { env: process.env });
  return (JSON.parse(stdout) as { api_key: string }).api_key;
}
