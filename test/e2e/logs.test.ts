import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API, http, newKey } from '../support/http.js';
import { SseStream } from '../support/sse.js';

/** Where scripts/test.mjs writes the processes' output (TEST_LOG_DIR; .data/test-logs by default). */
const LOG_DIR = process.env.TEST_LOG_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../.data/test-logs');

type LogLine = Record<string, any>;

/** Every line of a process's log, parsed; a line that is not a JSON object fails the test. */
function readLog(name: 'api' | 'worker'): { text: string; lines: LogLine[] } {
  const written = readFileSync(path.join(LOG_DIR, `${name}.log`), 'utf8');
  // The processes keep writing while this reads: a last line without its newline is still being
  // written, and is left for the next read.
  const text = written.slice(0, written.lastIndexOf('\n') + 1);
  const lines = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        assert.fail(`${name}.log has a line that is not JSON: ${line.slice(0, 300)}`);
      }
      assert.ok(parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed), `${name}.log: not an object: ${line.slice(0, 300)}`);
      return parsed as LogLine;
    });
  return { text, lines };
}

/** The log lines a predicate picks, once at least one was written (the launcher writes the files asynchronously; bounded). */
async function waitForLines(name: 'api' | 'worker', predicate: (line: LogLine) => boolean): Promise<{ text: string; found: LogLine[] }> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const { text, lines } = readLog(name);
    const found = lines.filter(predicate);
    if (found.length > 0) return { text, found };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`no matching line in ${name}.log within 10 s`);
}

describe('structured logs', () => {
  it('logs a request as a JSON line with its request_id, and never the API key or the message content', async () => {
    const requestId = `logs-test-${randomUUID()}`;
    const content = `confidential words ${randomUUID()}`;
    const create = await http(`${API}/sessions`, {
      body: { agent_id: 'default-chatbot' },
      idempotencyKey: newKey('create'),
      headers: { 'x-request-id': requestId },
    });
    assert.equal(create.status, 201);
    assert.equal(create.headers.get('x-request-id'), requestId, 'the response carries the request id');
    const sessionId = create.body.id as string;
    const stream = await SseStream.open(sessionId);
    let turnId: string;
    try {
      const message = await http(`${API}/sessions/${sessionId}/events`, {
        body: { events: [{ type: 'agent.session.input.message', input: content }] },
        idempotencyKey: newKey('msg'),
        headers: { 'x-request-id': `${requestId}-message` },
      });
      assert.equal(message.status, 202);
      turnId = (await stream.waitForType('agent.session.turn.completed')).data.turn_id;
    } finally {
      stream.close();
    }
    // A refused request is logged too, without the credentials it tried.
    const bogusKey = `yx_test_${randomUUID().replaceAll('-', '')}`;
    const refused = await http(`${API}/sessions`, { key: bogusKey, headers: { 'x-request-id': `${requestId}-refused` } });
    assert.equal(refused.status, 401);

    const { text: apiLog, found } = await waitForLines('api', (line) => line.request_id === `${requestId}-refused`);
    const lineOf = (id: string): LogLine => {
      const line = readLog('api').lines.find((entry) => entry.request_id === id && entry.req !== undefined);
      assert.ok(line, `a request line with request_id ${id}`);
      return line;
    };
    const created = lineOf(requestId);
    assert.equal(created.level, 'info');
    assert.equal(created.service, 'api');
    assert.equal(created.req.method, 'POST');
    assert.equal(created.req.url, `${API}/sessions`);
    assert.equal(created.res.status_code, 201);
    assert.equal(typeof created.responseTime, 'number');
    assert.equal(typeof created.time, 'string');
    assert.equal(lineOf(`${requestId}-message`).res.status_code, 202);
    assert.equal(found[0]!.res.status_code, 401);

    // What a request carries never reaches the log: no headers, no body, no key, no content.
    assert.ok(!apiLog.includes(env.apiKey), 'the API key secret is not in the api log');
    assert.ok(!apiLog.includes(bogusKey), 'a refused key is not in the api log');
    assert.ok(!apiLog.includes(content), 'the message content is not in the api log');
    assert.ok(!/"authorization"|"cookie"/i.test(apiLog), 'no request headers are logged');

    // The worker's lines about the run carry its ids; the content stays out of its log too.
    const { text: workerLog, found: settled } = await waitForLines('worker', (line) => line.turn_id === turnId && line.msg === 'turn completed');
    assert.equal(settled[0]!.session_id, sessionId);
    assert.match(String(settled[0]!.run_id), /^[0-9a-f-]{36}$/);
    assert.equal(settled[0]!.service, 'worker');
    assert.ok(!workerLog.includes(content), 'the message content is not in the worker log');
    assert.ok(!workerLog.includes(env.apiKey), 'the API key secret is not in the worker log');
  });
});
