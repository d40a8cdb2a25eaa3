import { newId } from '#libs/database';
import { compareStreamIds, encodeCursor, sequenceStep } from './cursor.js';
import { EVENT_FORMAT } from './event.types.js';
import { type ResyncReason, resyncEvent } from './outgoing-events.js';

/**
 * One stream entry holds what one publish appended: a committed batch of durable events, or the
 * live events of one tick (event-publisher.ts), one XADD for all of them. Its fields:
 *
 * - `q`, `f`, `x`: the stream's state after the entry (last durable sequence number, fence,
 *   expiry), which the publishing scripts read back from the newest entry;
 * - `l` when its events are live-only (they follow durable event `q`);
 * - per event `t` (type) and `e` (the public JSON), and for a durable event `s` (its sequence number).
 *
 * Entries written before batching have one event each (`t e s` for a durable one, `t e s l` for a
 * live one, `s` being the last durable sequence number then) and no state fields; an entry with no
 * event at all (a raised fence) yields nothing.
 */
export interface EntryEvent {
  type: string;
  data: string;
  /** A durable event's own sequence number, or for a live one the last durable one before it. */
  seq: number | null;
}

export function entryEvents(fields: string[]): { live: boolean; events: EntryEvent[] } {
  const events: (Omit<EntryEvent, 'seq'> & { seq?: number | null })[] = [];
  let live = false;
  let state: number | null = null;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i];
    const value = fields[i + 1] ?? '';
    if (name === 't') events.push({ type: value, data: '{}' });
    else if (name === 'e') {
      const current = events.at(-1);
      if (current) current.data = value;
    } else if (name === 's') {
      // An entry of the earlier format has one event: a live one's `s` comes after it, as a durable one's does.
      for (const event of events) if (event.seq === undefined) event.seq = seqOf(value);
    } else if (name === 'q') state = seqOf(value);
    else if (name === 'l') live = true;
  }
  return { live, events: events.map((event) => ({ type: event.type, data: event.data, seq: event.seq === undefined ? (live ? state : null) : event.seq })) };
}

function seqOf(value: string): number | null {
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** One SSE message, framed and UTF-8 encoded once, then written to every subscriber of the session. */
export interface StreamFrame {
  streamId: string;
  /** Its place among its entry's events, and whether it is the entry's last one. */
  part: number;
  final: boolean;
  /** A durable event's own sequence number, or for a live entry the last durable one before it. */
  seq: number | null;
  durable: boolean;
  frame: Buffer;
}

/**
 * The frames of one entry. An event before its entry's last gets a cursor that names its place in
 * the entry, so a client resuming there gets the rest of the entry; the last one's cursor is the
 * entry's (one-event entries, and every cursor issued before batching, read the same).
 */
export function toFrames(sessionId: string, streamId: string, fields: string[]): StreamFrame[] {
  const { live, events } = entryEvents(fields);
  return events.map((event, part) => {
    const final = part === events.length - 1;
    const cursor = encodeCursor(sessionId, streamId, event.seq, final ? null : part);
    return { streamId, part, final, seq: event.seq, durable: !live, frame: Buffer.from(`id: ${cursor}\nevent: ${event.type}\ndata: ${event.data}\n\n`) };
  });
}

/**
 * Receives what to write to one subscriber: one frame, or several joined into one Buffer (a batch
 * read in one go). The same Buffer goes to every subscriber that stands where the batch starts:
 * the sink must not modify it.
 */
export type Sink = (bytes: Buffer) => void;

export class Subscription {
  live = false;
  private readonly buffer: StreamFrame[] = [];
  /** While set, output is gathered here and written as one Buffer by `flush` (a catch-up page). */
  private gathered: Buffer[] | null = null;

  constructor(
    private readonly sessionId: string,
    public lastId: string,
    public lastSeq: number | null,
    private readonly sink: Sink,
    /** The last event delivered of entry `lastId`; null when the whole entry was. */
    public lastPart: number | null = null,
  ) {}

  /**
   * Delivers strictly after (lastId, lastPart), so catch-up and live reads may overlap without
   * duplicates. A durable event that is not the next in sequence means events were lost on the way
   * (a Redis outage, a restart without persistence): the subscriber is told to resync before it.
   */
  offer(frame: StreamFrame, fromCatchUp = false): void {
    if (!this.live && !fromCatchUp) {
      this.buffer.push(frame);
      return;
    }
    if (!this.isAhead(frame)) return;
    if (frame.durable) {
      const step = sequenceStep(this.lastSeq, frame.seq);
      if (step === 'skip') {
        this.moveTo(frame);
        return;
      }
      if (step === 'gap') this.emit(resyncFrame(this.sessionId, this.lastId, (frame.seq ?? 1) - 1, 'events_lost', this.lastPart).frame);
    } else if (frame.seq !== null && this.lastSeq !== null && frame.seq > this.lastSeq) {
      // A live entry that follows durable events this subscriber never got (a window that starts
      // mid-run): the deltas alone would hide the gap.
      this.emit(resyncFrame(this.sessionId, this.lastId, this.lastSeq, 'events_lost', this.lastPart).frame);
    }
    this.moveTo(frame);
    if (frame.seq !== null) this.lastSeq = frame.seq;
    this.emit(frame.frame);
  }

  private isAhead(frame: StreamFrame): boolean {
    const order = compareStreamIds(frame.streamId, this.lastId);
    return order > 0 || (order === 0 && this.lastPart !== null && frame.part > this.lastPart);
  }

  private moveTo(frame: StreamFrame): void {
    this.lastId = frame.streamId;
    this.lastPart = frame.final ? null : frame.part;
  }

  private emit(bytes: Buffer): void {
    if (this.gathered) this.gathered.push(bytes);
    else this.sink(bytes);
  }

  /** Offers many frames and writes what they yield at once: one write per page, not per event. */
  offerAll(frames: Iterable<StreamFrame>, fromCatchUp = false): void {
    this.gathered = [];
    try {
      for (const frame of frames) this.offer(frame, fromCatchUp);
    } finally {
      const out = this.gathered;
      this.gathered = null;
      if (out.length > 0) this.sink(out.length === 1 ? out[0]! : Buffer.concat(out));
    }
  }

  /**
   * The fast path of a live batch: this subscriber stood exactly where the batch's reference
   * subscriber did, so `offer` would have made the same decisions for every frame; it gets the
   * reference's output as is and moves to the reference's position.
   */
  take(bytes: Buffer | null, lastId: string, lastSeq: number | null): void {
    this.lastId = lastId;
    this.lastPart = null;
    this.lastSeq = lastSeq;
    if (bytes !== null) this.sink(bytes);
  }

  goLive(): void {
    this.live = true;
    this.offerAll(this.buffer.splice(0));
  }
}

/** Not stored anywhere: each subscriber that needs one gets its own, positioned where it stands. */
export function resyncFrame(sessionId: string, streamId: string, seq: number | null, reason: ResyncReason, part: number | null = null): StreamFrame {
  // The envelope's `yuxi` has the format only (no seq, no run): this event is the subscriber's own, never stored.
  const { type, ...payload } = resyncEvent(reason);
  const event = {
    type,
    event_id: `evt_${newId().replaceAll('-', '')}`,
    session_id: sessionId,
    created_at: Math.floor(Date.now() / 1000),
    ...payload,
    yuxi: { format: EVENT_FORMAT },
  };
  return {
    streamId,
    part: part ?? 0,
    final: part === null,
    seq,
    durable: false,
    frame: Buffer.from(`id: ${encodeCursor(sessionId, streamId, seq, part)}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
  };
}
