import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OUTPUT_BATCH_BYTES, OUTPUT_BATCH_MS, OutputBatcher, type ThrottleClock } from '#libs/runtime';

/** A clock the test moves by hand: scheduled work runs when its time is passed. */
class ManualClock implements ThrottleClock {
  private time = 0;
  private timers: { at: number; fn: () => void }[] = [];
  now(): number {
    return this.time;
  }
  schedule(fn: () => void, ms: number): () => void {
    const timer = { at: this.time + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((t) => t !== timer));
  }
  advance(ms: number): void {
    this.time += ms;
    for (const timer of this.timers.filter((t) => t.at <= this.time).sort((a, b) => a.at - b.at)) {
      this.timers = this.timers.filter((t) => t !== timer);
      timer.fn();
    }
  }
  get pending(): number {
    return this.timers.length;
  }
}

function batcher(): { clock: ManualClock; sent: string[]; output: OutputBatcher } {
  const clock = new ManualClock();
  const sent: string[] = [];
  return { clock, sent, output: new OutputBatcher((text) => sent.push(text), OUTPUT_BATCH_MS, OUTPUT_BATCH_BYTES, clock) };
}

// A command's live output (`agent.output.command_execution_output.delta`): pipe chunks joined into
// few events, none lost, all sent before the command's result.
describe('OutputBatcher', () => {
  it('batches every 100 ms or at 4 KiB by default', () => {
    assert.deepEqual([OUTPUT_BATCH_MS, OUTPUT_BATCH_BYTES], [100, 4096]);
  });

  it('joins the chunks of one interval into one event, in order, sent when the interval is up', () => {
    const { clock, sent, output } = batcher();
    for (let i = 0; i < 1000; i++) output.add(`${i % 10}`);
    assert.deepEqual(sent, [], 'held until the interval is up');
    clock.advance(99);
    assert.deepEqual(sent, []);
    clock.advance(1);
    assert.equal(sent.length, 1);
    assert.equal(sent[0], '0123456789'.repeat(100));
    output.add('next');
    clock.advance(100);
    assert.deepEqual(sent.slice(1), ['next']);
    assert.equal(clock.pending, 0, 'nothing is scheduled while nothing is held');
  });

  it('sends at once when the held output reaches 4 KiB (counted in UTF-8 bytes)', () => {
    const { clock, sent, output } = batcher();
    output.add('a'.repeat(4000));
    output.add('é'.repeat(48)); // 96 bytes: 4,096 in all
    assert.equal(sent.length, 1);
    assert.equal(Buffer.byteLength(sent[0]!), 4096);
    assert.equal(clock.pending, 0, 'the interval\'s timer went with the batch');
    output.add('b'.repeat(10_000));
    assert.equal(sent.length, 2, 'a chunk past the bound goes whole');
  });

  it('flush sends what is held before the result, and later chunks are ignored', () => {
    const { clock, sent, output } = batcher();
    output.add('tail');
    output.flush();
    assert.deepEqual(sent, ['tail']);
    assert.equal(clock.pending, 0);
    output.add('late');
    clock.advance(1000);
    output.flush();
    assert.deepEqual(sent, ['tail']);
    assert.equal(output.sent, 1);
  });

  it('empty chunks send nothing', () => {
    const { clock, sent, output } = batcher();
    output.add('');
    clock.advance(1000);
    output.flush();
    assert.deepEqual([sent, output.sent], [[], 0]);
  });
});
