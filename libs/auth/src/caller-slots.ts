/**
 * Work of one caller in flight in this process, bounded: at most `max` slots held at once per key
 * (0: no bound). What the per-caller limits on costly requests count (large bodies, file parsing):
 * per process, as the memory and CPU they protect are. Keys holding no slot are forgotten, so the
 * map never outgrows the requests in flight.
 */
export class CallerSlots {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes one of `key`'s slots; false when all are held. */
  take(key: string): boolean {
    if (this.max <= 0) return true;
    const count = this.held.get(key) ?? 0;
    if (count >= this.max) return false;
    this.held.set(key, count + 1);
    return true;
  }

  /** Gives back a slot `take` gave. */
  give(key: string): void {
    if (this.max <= 0) return;
    const count = (this.held.get(key) ?? 1) - 1;
    if (count <= 0) this.held.delete(key);
    else this.held.set(key, count);
  }

  /** How many keys hold slots now. */
  get size(): number {
    return this.held.size;
  }
}
