import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { StorageQuota } from '#libs/protocol';

// STORAGE_QUOTA_BYTES at acceptance: off costs no statement; on, one read of the owner's total, and
// a refusal stages nothing (the gate checks before the inline images are stored).

function quotaOf(quotaBytes: number, totals: Record<string, number>): { quota: StorageQuota; reads: string[] } {
  const reads: string[] = [];
  const dataSource = {
    query: async (sql: string, params: unknown[]) => {
      reads.push(sql);
      const bytes = totals[params[0] as string];
      return bytes === undefined ? [] : [{ bytes: String(bytes) }];
    },
  } as unknown as DataSource;
  return { quota: new StorageQuota(dataSource, { storageQuotaBytes: quotaBytes, retentionSweepMs: 60_000 } as AppConfig), reads };
}

const refused = (used: number, quota: number) => (error: unknown) =>
  error instanceof DomainError && error.code === 'storage_quota_exceeded' && error.details.used_bytes === used && error.details.quota_bytes === quota &&
  error.details.accounting_interval_s === 60 && /delete sessions/.test(error.message) && /next pass \(every 60 s\)/.test(error.message);

describe('storage quota', () => {
  it('off (0): no statement, nothing refused', async () => {
    const { quota, reads } = quotaOf(0, { a: 1e12 });
    assert.equal(quota.on, false);
    await quota.admit('a');
    assert.deepEqual(reads, []);
  });

  it('refuses an owner at or past the quota with the figures, admits one below it or never measured', async () => {
    const { quota, reads } = quotaOf(1000, { at: 1000, past: 5000, below: 999 });
    await assert.rejects(quota.admit('at'), refused(1000, 1000));
    await assert.rejects(quota.admit('past'), refused(5000, 1000));
    await quota.admit('below');
    await quota.admit('unmeasured');
    assert.equal(reads.length, 4);
  });

  it('the gate checks before staging: a refusal stages nothing and discards nothing', async () => {
    const { quota } = quotaOf(1000, { past: 5000, below: 1 });
    const calls: string[] = [];
    const staging = { stage: async () => void calls.push('stage'), discard: async () => void calls.push('discard') };
    const refusedGate = quota.gate('past', staging);
    await assert.rejects(refusedGate.stage(), refused(5000, 1000));
    await refusedGate.discard();
    assert.deepEqual(calls, []);
    const admitted = quota.gate('below', staging);
    await admitted.stage();
    await admitted.discard();
    assert.deepEqual(calls, ['stage', 'discard']);
  });
});
