import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { decodeCursor, type EventOutbox, EventStreamHub, StreamKeys } from '#libs/events';

// The hub's fan-out against an in-memory stand-in for the few Redis stream commands it uses
// (XRANGE, XINFO, EXISTS, a blocking XREAD woken by XADD): subscribers at different positions
// get exactly their own suffix of the stream, and those in step share one Buffer per batch.

type Entry = [string, string[]];

/** Session streams by session id (the `{…}` of the key), and blocked XREADs waiting for entries. */
class FakeStreams {
  readonly streams = new Map<string, Entry[]>();
  private waiters: (() => void)[] = [];
  private disconnected = false;

  private entries(key: string): Entry[] {
    const id = key.slice(key.indexOf('{') + 1, key.lastIndexOf('}'));
    let list = this.streams.get(id);
    if (!list) this.streams.set(id, (list = []));
    return list;
  }

  append(key: string, entries: Entry[]): void {
    this.entries(key).push(...entries);
    for (const wake of this.waiters.splice(0)) wake();
  }

  readonly redis = {
    exists: async (key: string) => (this.entries(key).length > 0 ? 1 : 0),
    xrange: async (key: string, from: string, _to: string, _count: string, count: number) =>
      this.entries(key)
        // `(id` is exclusive, a bare id inclusive (a cursor inside an entry reads that entry again).
        .filter(([id]) => (from.startsWith('(') ? after(id, from.slice(1)) : !after(from, id)))
        .slice(0, count),
    call: async (_xinfo: string, _stream: string, key: string) => {
      const list = this.entries(key);
      if (list.length === 0) throw new Error('ERR no such key');
      return ['last-generated-id', list.at(-1)![0], 'first-entry', list[0], 'max-deleted-entry-id', '0-0'];
    },
    xadd: async (key: string, ...args: string[]) => {
      this.append(key, [[`${Date.now()}-${this.entries(key).length}`, args.slice(-2)]]);
      return 'ok';
    },
    expire: async () => 1,
    del: async () => 1,
    ping: async () => 'PONG',
  };

  readonly reader = {
    xread: async (...args: (string | number)[]): Promise<[string, Entry[]][] | null> => {
      const streams = args.slice(args.indexOf('STREAMS') + 1).map(String);
      const keys = streams.slice(0, streams.length / 2);
      // `$`: what is appended after the call, as Redis reads it.
      const positions = streams.slice(streams.length / 2).map((position, i) => (position === '$' ? (this.entries(keys[i]!).at(-1)?.[0] ?? '0-0') : position));
      for (;;) {
        if (this.disconnected) throw new Error('Connection is closed.');
        const result = keys
          .map((key, i): [string, Entry[]] => [key, this.entries(key).filter(([id]) => after(id, positions[i]!))])
          .filter(([, entries]) => entries.length > 0);
        if (result.length > 0) return result;
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      }
    },
    disconnect: () => {
      this.disconnected = true;
      for (const wake of this.waiters.splice(0)) wake();
    },
  };
}

function after(id: string, position: string): boolean {
  const [ms, seq] = id.split('-').map(Number);
  const [pms, pseq] = position.split('-').map(Number);
  return ms! > pms! || (ms === pms && seq! > pseq!);
}

function durable(id: string, seq: number, type = 'agent.session.turn.item.added'): Entry {
  return [id, ['t', type, 'e', JSON.stringify({ type, event_id: `evt_${id}` }), 's', String(seq)]];
}

function live(id: string, lastSeq: number): Entry {
  const type = 'agent.session.turn.output_text.delta';
  return [id, ['t', type, 'e', JSON.stringify({ type, event_id: `evt_${id}` }), 's', String(lastSeq), 'l', '1']];
}

/** What one subscriber was given: each write, and the messages they hold. */
class Sink {
  readonly writes: Buffer[] = [];
  readonly write = (bytes: Buffer): void => void this.writes.push(bytes);

  messages(sessionId: string): { streamId: string; type: string; eventId: string }[] {
    return Buffer.concat(this.writes)
      .toString('utf8')
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const field = (name: string): string => block.split('\n').find((line) => line.startsWith(`${name}: `))!.slice(name.length + 2);
        return { streamId: decodeCursor(sessionId, field('id'))!.streamId, type: field('event'), eventId: (JSON.parse(field('data')) as { event_id: string }).event_id };
      });
  }
}

/** Lets the hub's read loop run until `done` holds (bounded: event-loop turns, not time). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i += 1) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(done(), 'delivered within 200 event-loop turns');
}

describe('EventStreamHub fan-out', () => {
  it('gives each subscriber its own suffix, shares one Buffer per batch among those in step, and resyncs each on its own after a gap', async () => {
    const fake = new FakeStreams();
    // One server: one reader connection for every group, and the single-server key names.
    const connections = { of: () => fake.reader as unknown as Redis, close: () => fake.reader.disconnect() };
    const hub = new EventStreamHub(fake.redis as unknown as Redis, connections, { flush: async () => undefined } as unknown as EventOutbox, new StreamKeys(null));
    const session = '01a20000-0000-7000-8000-000000000001';
    const key = `yuxi:session-events:{${session}}`;
    fake.append(key, [durable('1-0', 1, 'agent.session.created'), durable('2-0', 2)]);
    try {
      const a = new Sink();
      const b = new Sink();
      const c = new Sink();
      const d = new Sink();
      await hub.subscribe(session, null, a.write);
      await hub.subscribe(session, { streamId: '1-0', seq: 1 }, b.write);
      // A cursor from before sequence numbers: no seq, so it is not in step with the others.
      await hub.subscribe(session, { streamId: '2-0', seq: null }, c.write);
      await hub.subscribe(session, { streamId: '2-0', seq: 2 }, d.write);
      assert.deepEqual(a.messages(session).map((m) => m.streamId), ['1-0', '2-0']);
      assert.deepEqual(b.messages(session).map((m) => m.streamId), ['2-0']);
      assert.deepEqual(c.messages(session), []);

      // One read batch: durable, live, durable.
      const writesBefore = [a, b, c, d].map((s) => s.writes.length);
      fake.append(key, [durable('3-0', 3), live('4-0', 3), durable('5-0', 4)]);
      await until(() => [a, b, c, d].every((s, i) => s.writes.length > writesBefore[i]!));
      for (const sink of [a, b, c, d]) assert.deepEqual(sink.messages(session).map((m) => m.streamId).slice(-3), ['3-0', '4-0', '5-0']);
      assert.deepEqual([a, b, c, d].map((s, i) => s.writes.length - writesBefore[i]!), [1, 1, 1, 1], 'the batch is one write per subscriber');
      assert.equal(a.writes.at(-1), b.writes.at(-1), 'subscribers in step get the very same Buffer');
      assert.equal(a.writes.at(-1), d.writes.at(-1));
      assert.notEqual(a.writes.at(-1), c.writes.at(-1), 'the one elsewhere (no seq) had its own frames joined');
      assert.deepEqual(c.writes.at(-1), a.writes.at(-1), '… with the same bytes');

      // Durable seq 5 never arrives: each subscriber is told, with a resync event of its own.
      fake.append(key, [durable('6-0', 6)]);
      await until(() => [a, b, c, d].every((s) => s.messages(session).at(-1)?.streamId === '6-0'));
      const resyncs = [a, b, c, d].map((s) => s.messages(session).at(-2)!);
      assert.ok(resyncs.every((m) => m.type === 'yuxi.session.resync'));
      assert.equal(new Set(resyncs.map((m) => m.eventId)).size, 4, 'each resync is the subscriber\'s own');

      // Back in step after the gap: the next batch is shared again.
      fake.append(key, [durable('7-0', 7)]);
      await until(() => [a, b, c, d].every((s) => s.messages(session).at(-1)?.streamId === '7-0'));
      assert.equal(a.writes.at(-1), b.writes.at(-1));
      assert.deepEqual(
        a.messages(session).map((m) => m.eventId).filter((id) => id.includes('-')),
        ['evt_1-0', 'evt_2-0', 'evt_3-0', 'evt_4-0', 'evt_5-0', 'evt_6-0', 'evt_7-0'],
        'nothing twice, nothing skipped',
      );
    } finally {
      await hub.onApplicationShutdown();
    }
  });

  it('reads entries of several events as their events in order, and resumes inside an entry with exactly its later events', async () => {
    const fake = new FakeStreams();
    const connections = { of: () => fake.reader as unknown as Redis, close: () => fake.reader.disconnect() };
    const hub = new EventStreamHub(fake.redis as unknown as Redis, connections, { flush: async () => undefined } as unknown as EventOutbox, new StreamKeys(null));
    const session = '01a20000-0000-7000-8000-000000000002';
    const key = `yuxi:session-events:{${session}}`;
    const event = (name: string, type = 'agent.session.turn.item.added'): string[] => ['t', type, 'e', JSON.stringify({ type, event_id: `evt_${name}` })];
    // One committed batch of three durable events, then one tick of two live deltas after seq 3,
    // then an entry with no event (a raised fence), then a durable event of the earlier format.
    fake.append(key, [
      ['1-0', ['q', '3', 'f', '0', 'x', '9', ...event('a'), 's', '1', ...event('b'), 's', '2', ...event('c'), 's', '3']],
      ['2-0', ['q', '3', 'f', '0', 'x', '9', 'l', '1', ...event('d', 'agent.session.turn.output_text.delta'), ...event('e', 'agent.session.turn.output_text.delta')]],
      ['3-0', ['q', '3', 'f', '7', 'x', '9']],
    ]);
    try {
      const all = new Sink();
      await hub.subscribe(session, null, all.write);
      const ids = (sink: Sink) => sink.messages(session).map((m) => m.eventId);
      assert.deepEqual(ids(all), ['evt_a', 'evt_b', 'evt_c', 'evt_d', 'evt_e']);
      const cursors = Buffer.concat(all.writes).toString('utf8').split('\n').filter((line) => line.startsWith('id: ')).map((line) => decodeCursor(session, line.slice(4))!);
      assert.deepEqual(cursors, [
        { streamId: '1-0', seq: 1, part: 0 },
        { streamId: '1-0', seq: 2, part: 1 },
        { streamId: '1-0', seq: 3 },
        { streamId: '2-0', seq: 3, part: 0 },
        { streamId: '2-0', seq: 3 },
      ]);

      // Resuming at each event gets exactly the events after it, in the same entry and later ones.
      for (const [i, cursor] of cursors.entries()) {
        const resumed = new Sink();
        await hub.subscribe(session, cursor, resumed.write);
        assert.deepEqual(ids(resumed), ids(all).slice(i + 1), `resumed after event ${i}`);
      }

      fake.append(key, [durable('4-0', 4)]);
      await until(() => ids(all).length === 6);
      assert.deepEqual(ids(all).at(-1), 'evt_4-0', 'an entry of the earlier format still reads as its one event');
    } finally {
      await hub.onApplicationShutdown();
    }
  });
});
