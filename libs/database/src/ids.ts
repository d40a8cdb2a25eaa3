import { randomFillSync } from 'node:crypto';
import { v5 as uuidv5 } from 'uuid';

/** Random bytes drawn in blocks: one fill per 256 ids instead of one per id (the profile showed it). */
const POOL = Buffer.alloc(16 * 256);
let poolAt = POOL.length;
function random(bytes: number): number {
  if (poolAt + bytes > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += bytes;
  return at;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The last id's millisecond and counter: ids of one process keep increasing within a millisecond and when the clock steps back. */
const last = { ms: 0, counter: 0 };
/** 30 counter bits (the 12 of rand_a and the first 18 of rand_b), started at a random value below 2^29 each new millisecond. */
const COUNTER_MAX = 2 ** 30 - 1;

/**
 * Time-ordered UUIDv7 (RFC 9562, method 3: a counter in rand_a and the top of rand_b): ids sort by
 * creation, which keeps btree inserts local and cursors cheap. Monotonic within the process.
 */
export function newId(): string {
  return idAt(Date.now());
}

/** newId() at a given clock reading (tests step the clock back with it). */
export function idAt(now: number): string {
  if (now > last.ms) {
    last.ms = now;
    const at = random(4);
    last.counter = POOL.readUInt32BE(at) & (2 ** 29 - 1);
  } else if (last.counter < COUNTER_MAX) {
    last.counter += 1;
  } else {
    // 2^30 ids in one millisecond: borrow the next one, as the RFC allows.
    last.ms += 1;
    last.counter = 0;
  }
  return formatV7(last.ms, last.counter, random(6));
}

/** The id's 16 bytes as text: 48-bit ms, version 7, the counter's high 12 bits, variant 10, its low 18 bits, 44 random bits. */
function formatV7(ms: number, counter: number, randomAt: number): string {
  const high = Math.floor(ms / 2 ** 16);
  const low = ms % 2 ** 16;
  const b = [
    (high >>> 24) & 0xff,
    (high >>> 16) & 0xff,
    (high >>> 8) & 0xff,
    high & 0xff,
    (low >>> 8) & 0xff,
    low & 0xff,
    0x70 | ((counter >>> 26) & 0x0f),
    (counter >>> 18) & 0xff,
    0x80 | ((counter >>> 12) & 0x3f),
    (counter >>> 4) & 0xff,
    ((counter & 0x0f) << 4) | (POOL[randomAt]! & 0x0f),
    POOL[randomAt + 1]!,
    POOL[randomAt + 2]!,
    POOL[randomAt + 3]!,
    POOL[randomAt + 4]!,
    POOL[randomAt + 5]!,
  ];
  return `${HEX[b[0]!]}${HEX[b[1]!]}${HEX[b[2]!]}${HEX[b[3]!]}-${HEX[b[4]!]}${HEX[b[5]!]}-${HEX[b[6]!]}${HEX[b[7]!]}-${HEX[b[8]!]}${HEX[b[9]!]}-${HEX[b[10]!]}${HEX[b[11]!]}${HEX[b[12]!]}${HEX[b[13]!]}${HEX[b[14]!]}${HEX[b[15]!]}`;
}

/** The namespace of ids derived from what made them (a member session from its spawning call). */
const DERIVED_NAMESPACE = '0b5c4f0e-5a43-4f6e-9d0c-7a1f2c3e4d5b';

/**
 * A UUIDv5 of `name`: the same name always gives the same id, so a step that is retried or taken
 * over creates the row it already created (ON CONFLICT DO NOTHING), never a second one.
 */
export function derivedId(name: string): string {
  return uuidv5(name, DERIVED_NAMESPACE);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Public times are Unix seconds. */
export function unixSeconds(date: Date): number;
export function unixSeconds(date: Date | null): number | null;
export function unixSeconds(date: Date | null): number | null {
  return date ? Math.floor(date.getTime() / 1000) : null;
}
