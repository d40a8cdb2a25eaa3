// A small client of the API under test, for the benchmark driver.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { EventSource } from 'eventsource';

export class Client {
  constructor(baseUrl, apiKey) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
    this.api = `${baseUrl}/api/v1/agents`;
  }

  headers(extra = {}) {
    return { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', ...extra };
  }

  async createSession(input, agentId = 'default-chatbot') {
    const res = await fetch(`${this.api}/sessions`, {
      method: 'POST',
      headers: this.headers({ 'idempotency-key': randomUUID() }),
      body: JSON.stringify(input === undefined ? { agent_id: agentId } : { agent_id: agentId, input }),
    });
    if (res.status !== 201) throw new Error(`create session: ${res.status} ${await res.text()}`);
    return res.json();
  }

  /** Creates a budget (the bench key's account). */
  async createBudget(body) {
    const res = await fetch(`${this.api}/budgets`, { method: 'POST', headers: this.headers({ 'idempotency-key': randomUUID() }), body: JSON.stringify(body) });
    if (res.status !== 201 && res.status !== 200) throw new Error(`create budget: ${res.status} ${await res.text()}`);
    return res.json();
  }

  /** Creates or replaces a saved agent (admin API; the bench key has full access). */
  async putAgent(agentId, definition) {
    const res = await fetch(`${this.baseUrl}/api/v1/admin/agents/${agentId}`, { method: 'PUT', headers: this.headers(), body: JSON.stringify(definition) });
    if (res.status !== 200 && res.status !== 201) throw new Error(`put agent: ${res.status} ${await res.text()}`);
    return res.json();
  }

  /** The items of one turn, oldest first. */
  async turnItems(sessionId, turnId) {
    const res = await fetch(`${this.api}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`, { headers: this.headers() });
    if (res.status !== 200) throw new Error(`turn items: ${res.status} ${await res.text()}`);
    return (await res.json()).data;
  }

  async send(sessionId, text, key = randomUUID()) {
    const res = await fetch(`${this.api}/sessions/${sessionId}/events`, {
      method: 'POST',
      headers: this.headers({ 'idempotency-key': key }),
      body: JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }] }),
    });
    if (res.status !== 202) throw new Error(`send: ${res.status} ${await res.text()}`);
    return res.json();
  }

  /**
   * DELETE …/sessions/{id}. A turn announced completed may still be releasing its run for a moment
   * (a delete is refused with 409 while a turn is active): retried, bounded (50 × 100 ms).
   */
  async deleteSession(id) {
    for (let attempt = 0; ; attempt += 1) {
      const res = await fetch(`${this.api}/sessions/${id}`, { method: 'DELETE', headers: this.headers() });
      if (res.status === 200) return;
      if (res.status !== 409 || attempt >= 50) throw new Error(`delete session: ${res.status} ${await res.text()}`);
      await res.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** An EventSource (the `eventsource` package) on the session stream, with the API key attached. */
  subscribe(sessionId) {
    const apiKey = this.apiKey;
    return new EventSource(`${this.api}/sessions/${sessionId}/events`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${apiKey}` } }),
    });
  }
}

/**
 * A subscriber that reads the stream without parsing it into events: it only counts delta frames
 * (a byte search) and notices the turn's end. It puts the same load on the server as a full client
 * at a fraction of the client CPU, so fan-out runs measure the server rather than the load generator.
 */
export function rawSubscribe(client, sessionId, { onDeltas, onCompleted }) {
  const DELTA = Buffer.from('event: agent.session.turn.output_text.delta');
  const COMPLETED = Buffer.from('event: agent.session.turn.completed');
  return new Promise((resolve, reject) => {
    const req = http.get(`${client.api}/sessions/${sessionId}/events`, { headers: { authorization: `Bearer ${client.apiKey}` }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`raw subscribe: ${res.statusCode}`));
      let tail = Buffer.alloc(0);
      res.on('data', (chunk) => {
        // Keep a short tail so a marker split across chunks is still found once.
        const data = tail.length ? Buffer.concat([tail, chunk]) : chunk;
        let count = 0;
        for (let at = data.indexOf(DELTA); at !== -1; at = data.indexOf(DELTA, at + DELTA.length)) count += 1;
        if (count) onDeltas(count);
        if (data.includes(COMPLETED)) onCompleted();
        tail = data.subarray(Math.max(0, data.length - COMPLETED.length + 1));
        if (tail.includes(DELTA) || tail.includes(COMPLETED)) tail = Buffer.alloc(0);
      });
      resolve({ close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

/** The Redis stream id inside an SSE cursor carries the publish time in ms (bench-only knowledge of the format). */
export function publishedAtMs(cursor) {
  const streamId = Buffer.from(cursor, 'base64url').toString('utf8').split(':')[2] ?? '';
  return Number(streamId.split('-')[0]);
}

/** Resolves on the next event of `type` from an EventSource. */
export function nextEvent(source, type, predicate = () => true, timeoutMs = 30_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      source.removeEventListener(type, onEvent);
      reject(new Error(`no ${type} within ${timeoutMs} ms`));
    }, timeoutMs);
    function onEvent(event) {
      const data = JSON.parse(event.data);
      if (!predicate(data)) return;
      clearTimeout(timer);
      source.removeEventListener(type, onEvent);
      resolve({ data, id: event.lastEventId });
    }
    source.addEventListener(type, onEvent);
  });
}

export function opened(source, timeoutMs = 30_000) {
  if (source.readyState === 1) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('SSE did not open')), timeoutMs);
    source.addEventListener('open', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
    source.addEventListener('error', (error) => {
      if (source.readyState === 2) {
        clearTimeout(timer);
        reject(new Error(`SSE failed: ${error.message ?? error.code}`));
      }
    });
  });
}
