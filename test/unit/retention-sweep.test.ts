import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppConfig } from '#libs/config';
import type { RetentionBatch, RetentionKind, RetentionTask } from '#libs/database';
import { metrics } from '#libs/metrics';
import { RETENTION_BATCHES_PER_TICK, RetentionSweep } from '#libs/retention';
import { parseExposition, total } from '../support/metrics.js';

// The retention sweep (libs/retention/src/retention-sweep.ts) over stand-in tasks: batches until a
// task drains or the per-tick bound, one failing task never stops the others, and what it reports
// (its tick report and the retention metrics).

const BATCH_ROWS = 7;
const config = { retentionBatchRows: BATCH_ROWS } as AppConfig;

/** A task that answers the batches it is given, in order (then empty ones), and records what it was asked. */
class FakeTask implements RetentionTask {
  readonly limits: number[] = [];
  lagReads = 0;

  constructor(
    readonly kind: RetentionKind,
    private readonly batches: (RetentionBatch | Error)[],
    private readonly lag = 0,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    this.limits.push(limit);
    const next = this.batches[this.limits.length - 1] ?? { rows: 0, bytes: 0, more: false };
    if (next instanceof Error) throw next;
    return next;
  }

  async lagSeconds(): Promise<number> {
    this.lagReads += 1;
    return this.lag;
  }
}

/** A batch that removed `rows` rows of 100 bytes each. */
const full = (rows: number, more = true): RetentionBatch => ({ rows, bytes: rows * 100, more });

metrics.register('worker');
const counters = async (kind: RetentionKind) => {
  const scrape = parseExposition(await metrics.scrape());
  return {
    rows: total(scrape, 'yuxi_retention_rows_removed_total', { kind }),
    bytes: total(scrape, 'yuxi_retention_bytes_removed_total', { kind }),
    failures: total(scrape, 'yuxi_retention_failures_total', { kind }),
    lag: total(scrape, 'yuxi_retention_lag_seconds', { kind }),
  };
};

describe('retention sweep', () => {
  it('runs a task\'s batches of RETENTION_BATCH_ROWS until one says nothing more is due; the drained task\'s lag is 0 without a read', async () => {
    const task = new FakeTask('model_requests', [full(7), full(7), full(3, false)], 99);
    const before = await counters('model_requests');
    const [report] = await new RetentionSweep([task], config).run();
    assert.deepEqual(report, { kind: 'model_requests', rows: 17, bytes: 1700, batches: 3, failed: false });
    assert.deepEqual(task.limits, [BATCH_ROWS, BATCH_ROWS, BATCH_ROWS]);
    assert.equal(task.lagReads, 0, 'drained: nothing is due, no lag read');
    const after = await counters('model_requests');
    assert.deepEqual(after, { rows: before.rows + 17, bytes: before.bytes + 1700, failures: before.failures, lag: 0 });
  });

  it('an idle task costs one batch (its probe) and no lag read', async () => {
    const task = new FakeTask('audit', []);
    const [report] = await new RetentionSweep([task], config).run();
    assert.deepEqual(report, { kind: 'audit', rows: 0, bytes: 0, batches: 1, failed: false });
    assert.equal(task.lagReads, 0);
  });

  it('stops a task at RETENTION_BATCHES_PER_TICK batches and reads its lag: the backlog is the next tick\'s', async () => {
    const task = new FakeTask('cooperation_signals', Array.from({ length: RETENTION_BATCHES_PER_TICK + 5 }, () => full(BATCH_ROWS)), 42.5);
    const [report] = await new RetentionSweep([task], config).run();
    assert.equal(report!.batches, RETENTION_BATCHES_PER_TICK);
    assert.equal(task.limits.length, RETENTION_BATCHES_PER_TICK, 'no batch past the bound');
    assert.equal(report!.rows, RETENTION_BATCHES_PER_TICK * BATCH_ROWS);
    assert.equal(report!.bytes, RETENTION_BATCHES_PER_TICK * BATCH_ROWS * 100);
    assert.equal(task.lagReads, 1);
    assert.equal((await counters('cooperation_signals')).lag, 42.5);
  });

  it('a failing task is reported and counted; the tasks after it still run, and what it removed before failing counts', async () => {
    const first = new FakeTask('deleted_sessions', [full(4, false)]);
    const failing = new FakeTask('session_ttl', [full(2), new Error('database went away')]);
    const last = new FakeTask('audit', [full(5, false)]);
    const before = await counters('session_ttl');
    const reports = await new RetentionSweep([first, failing, last], config).run();
    assert.deepEqual(
      reports.map((r) => [r.kind, r.rows, r.batches, r.failed]),
      [
        ['deleted_sessions', 4, 1, false],
        ['session_ttl', 2, 1, true],
        ['audit', 5, 1, false],
      ],
      'in task order; the failed batch is not counted as one',
    );
    assert.equal(failing.lagReads, 0, 'no lag read after a failure');
    const after = await counters('session_ttl');
    assert.equal(after.failures, before.failures + 1);
    assert.equal(after.rows, before.rows + 2, 'the batch that committed before the failure');
  });

  it('a task whose lag read fails is a failure too, after its rows were counted', async () => {
    const task = new FakeTask('deleted_sessions', Array.from({ length: RETENTION_BATCHES_PER_TICK }, () => full(1)));
    task.lagSeconds = () => Promise.reject(new Error('statement timeout'));
    const next = new FakeTask('audit', [full(1, false)]);
    const reports = await new RetentionSweep([task, next], config).run();
    assert.deepEqual(reports.map((r) => [r.kind, r.rows, r.failed]), [['deleted_sessions', RETENTION_BATCHES_PER_TICK, true], ['audit', 1, false]]);
  });
});
