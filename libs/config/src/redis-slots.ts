/** Redis Cluster divides the key space into this many hash slots. */
export const CLUSTER_SLOTS = 16_384;

/**
 * CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes keys with
 * (cluster spec, "Keys distribution model"). A table built once: the hub and the publisher
 * compute slots on every subscription and relay pass.
 */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

export function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0);
  return crc;
}

/**
 * The part of a key that Redis hashes: the text between the first `{` and the next `}` when that
 * is not empty (a hash tag), else the whole key — the rule of the cluster spec, so that keys we
 * tag alike provably share a slot.
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** The cluster slot of a key, as `CLUSTER KEYSLOT` answers it. */
export function keySlot(key: string): number {
  return crc16(Buffer.from(hashTagOf(key), 'utf8')) % CLUSTER_SLOTS;
}

/**
 * The indexes of `keys` grouped by slot, in first-seen order: a pipeline or multi-key command
 * per group stays within one slot, which is all Redis Cluster allows.
 */
export function groupBySlot(keys: readonly string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, index) => {
    const slot = keySlot(key);
    const group = groups.get(slot);
    if (group) group.push(index);
    else groups.set(slot, [index]);
  });
  return [...groups.values()];
}
