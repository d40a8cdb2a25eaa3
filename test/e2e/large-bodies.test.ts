import assert from 'node:assert/strict';
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { call, signToken } from '../support/identity.js';

// MAX_CONCURRENT_LARGE_BODIES (2 by default, as on the test stack): a user may have at most two
// request bodies over 1 MiB in flight at once; the next is answered 429 with Retry-After before
// its body is read, while other users, and the same user's small requests, are served.

const LARGE = 2 * 1024 * 1024;
const SESSIONS = '/api/v1/agents/sessions';

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

/** A POST that announces `length` bytes and sends only the first chunk: it stays in flight until finished or aborted. */
class SlowUpload {
  readonly req: ClientRequest;
  readonly answered: Promise<Answer>;
  private readonly payload: Buffer;

  constructor(token: string, length = LARGE) {
    // Valid JSON once complete: an object with one long (unknown) field.
    this.payload = Buffer.from(`{"pad":"${'x'.repeat(length - 10)}"}`);
    const url = new URL(SESSIONS, env.apiUrl);
    this.req = request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(this.payload.length), 'idempotency-key': randomUUID() } });
    this.answered = new Promise((resolve, reject) => {
      this.req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null });
        });
      });
      this.req.on('error', reject);
    });
    // Writing after a refusal (the server closes the connection) is not this test's concern.
    this.answered.catch(() => undefined);
    this.req.write(this.payload.subarray(0, 64 * 1024));
  }

  finish(): Promise<Answer> {
    this.req.end(this.payload.subarray(64 * 1024));
    return this.answered;
  }

  abort(): void {
    this.req.destroy();
  }
}

async function userToken(): Promise<string> {
  const token = await signToken({ subject: `large-${randomUUID()}` });
  const me = await call({ name: 'large', token }, '/api/v1/me');
  assert.equal(me.status, 200, me.text);
  return token;
}

describe('large request bodies in flight per user', () => {
  const open: SlowUpload[] = [];
  after(() => open.forEach((upload) => upload.abort()));
  const slow = (token: string): SlowUpload => {
    const upload = new SlowUpload(token);
    open.push(upload);
    return upload;
  };

  it('a third large body in flight is refused with 429, Retry-After and a stable code, before its body is read', async () => {
    const token = await userToken();
    const uploads = [slow(token), slow(token), slow(token)];
    // Each sent only its first 64 KiB: whichever reached the gate third is answered now, the two
    // before it wait for the rest of their bodies.
    const refused = await Promise.race(uploads.map((upload, index) => upload.answered.then((answer) => ({ answer, index }))));
    assert.equal(refused.answer.status, 429, JSON.stringify(refused.answer.body));
    assert.equal(refused.answer.body.error.code, 'too_many_large_bodies');
    assert.equal(refused.answer.headers['retry-after'], '1');
    const [holder, alsoHolder] = uploads.filter((_, index) => index !== refused.index);

    // Small requests of the same user are served meanwhile.
    const small = await call({ name: 'large', token }, SESSIONS, { method: 'POST', body: { agent_id: 'default-chatbot' } });
    assert.notEqual(small.status, 429, small.text);

    // Another user's large body is not held up by this one's: it is read and validated.
    const other = await slow(await userToken()).finish();
    assert.equal(other.status, 422, JSON.stringify(other.body));

    // A body that was read to its end frees its slot for the next one; the other still holds its own.
    assert.equal((await holder!.finish()).status, 422);
    const next = await slow(token).finish();
    assert.equal(next.status, 422, JSON.stringify(next.body));
    assert.equal((await alsoHolder!.finish()).status, 422);
  });
});
