import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROGRESS_EVENTS_PER_SECOND, ProgressThrottle, type ThrottleClock } from '#libs/runtime';

/** A clock the test moves by hand: scheduled work runs when its time is passed, in order. */
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

function throttle(): { clock: ManualClock; sent: number[]; progress: ProgressThrottle<number> } {
  const clock = new ManualClock();
  const sent: number[] = [];
  return { clock, sent, progress: new ProgressThrottle<number>((p) => sent.push(p), 250, clock) };
}

describe('ProgressThrottle', () => {
  it('sends about 4 reports a second per call by default', () => {
    assert.equal(PROGRESS_EVENTS_PER_SECOND, 4);
  });

  it('sends reports spaced wider than the interval as they come', () => {
    const { clock, sent, progress } = throttle();
    for (let p = 1; p <= 3; p++) {
      progress.report(p);
      clock.advance(300);
    }
    assert.deepEqual(sent, [1, 2, 3]);
    assert.equal(progress.sent, 3);
  });

  it('drops the reports between two sends, and sends the latest when the interval is up', () => {
    const { clock, sent, progress } = throttle();
    progress.report(1);
    clock.advance(10);
    progress.report(2);
    progress.report(3);
    progress.report(4);
    assert.deepEqual(sent, [1], 'held, not sent, within the interval');
    clock.advance(239);
    assert.deepEqual(sent, [1]);
    clock.advance(1);
    assert.deepEqual(sent, [1, 4], 'the latest held report, 250 ms after the last send');
    progress.report(5);
    assert.deepEqual(sent, [1, 4], 'the next one waits a whole interval after that send');
    clock.advance(250);
    assert.deepEqual(sent, [1, 4, 5]);
  });

  it('sends the held report at once when the call ends, and nothing after', () => {
    const { clock, sent, progress } = throttle();
    progress.report(1);
    progress.report(2);
    progress.flush();
    assert.deepEqual(sent, [1, 2]);
    assert.equal(clock.pending, 0, 'no timer is left behind');
    progress.report(3);
    clock.advance(1000);
    assert.deepEqual(sent, [1, 2]);
  });

  it('drops the held report of an abandoned call, and nothing is sent after', () => {
    const { clock, sent, progress } = throttle();
    progress.report(1);
    progress.report(2);
    progress.close();
    clock.advance(1000);
    progress.report(3);
    assert.deepEqual(sent, [1]);
    assert.equal(clock.pending, 0);
  });

  it('never sends more than one report per interval, however fast they come', () => {
    const { clock, sent, progress } = throttle();
    for (let p = 1; p <= 100; p++) {
      progress.report(p);
      clock.advance(10);
    }
    progress.flush();
    // 1 s of reports: the first, one per 250 ms after it, and the last at the end.
    assert.ok(sent.length <= 1000 / 250 + 1, `sent ${sent.length}: ${sent.join(', ')}`);
    assert.equal(sent.at(-1), 100, 'the last report always goes out');
    assert.deepEqual([...sent].sort((a, b) => a - b), sent, 'in the order they came');
  });
});
