// When webhook deliveries are retried and when an endpoint is given up on: pure functions, the
// clock and the randomness passed in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_DISABLE_AFTER_MS, DEFAULT_RETRY_SCHEDULE_MS, endpointVerdict, parseRetryAfter, parseRetrySchedule, RETRY_AFTER_CAP_MS, retryDelayMs } from '#libs/webhooks';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('retry schedule', () => {
  it('is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h by default', () => {
    assert.deepEqual([...DEFAULT_RETRY_SCHEDULE_MS], [5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
    assert.deepEqual(parseRetrySchedule(''), [...DEFAULT_RETRY_SCHEDULE_MS]);
    assert.deepEqual(parseRetrySchedule('  '), [...DEFAULT_RETRY_SCHEDULE_MS]);
  });

  it('parses comma-separated durations in ms, s, m, h and d', () => {
    assert.deepEqual(parseRetrySchedule('1s,2s,500ms,5m,2h'), [1 * S, 2 * S, 500, 5 * M, 2 * H]);
    assert.deepEqual(parseRetrySchedule(' 1d , 1.5s ,0ms'), [24 * H, 1500, 0]);
  });

  it('refuses anything else, naming the item', () => {
    for (const [text, item] of [
      ['1s,,2s', 'item 2'],
      ['1s,', 'item 2'],
      ['5', 'item 1'],
      ['5 min', 'item 1'],
      ['1s,-2s', 'item 2'],
      ['1S', 'item 1'],
      ['1s;2s', 'item 1'],
    ]) {
      assert.throws(() => parseRetrySchedule(text), (error: Error) => error.message.includes(item) && /not a duration/.test(error.message), text);
    }
  });
});

describe('retryDelayMs', () => {
  const schedule = parseRetrySchedule('1s,2s,500ms');
  const middle = () => 0.5;

  it('follows the schedule, then says no more retries', () => {
    assert.deepEqual([0, 1, 2].map((n) => retryDelayMs(n, schedule, middle, null)), [1000, 2000, 500]);
    assert.equal(retryDelayMs(3, schedule, middle, null), null);
    assert.equal(retryDelayMs(7, DEFAULT_RETRY_SCHEDULE_MS, middle, null), null);
    assert.equal(retryDelayMs(6, DEFAULT_RETRY_SCHEDULE_MS, middle, null), 10 * H);
    assert.equal(retryDelayMs(0, [], middle, null), null);
    assert.equal(retryDelayMs(-1, schedule, middle, null), null);
  });

  it('moves each delay by at most 10 % either way', () => {
    assert.equal(retryDelayMs(1, schedule, () => 0, null), 1800);
    assert.equal(retryDelayMs(1, schedule, () => 0.999999, null), 2200);
    for (let i = 0; i < 200; i++) {
      const delay = retryDelayMs(4, DEFAULT_RETRY_SCHEDULE_MS, Math.random, null)!;
      assert.ok(delay >= 4.5 * H && delay <= 5.5 * H, String(delay));
    }
  });

  it('waits longer when Retry-After asks, up to 24 h, and never shorter than the schedule', () => {
    assert.equal(retryDelayMs(0, schedule, middle, 30 * S), 30 * S);
    assert.equal(retryDelayMs(0, schedule, middle, 3 * 24 * H), RETRY_AFTER_CAP_MS);
    assert.equal(RETRY_AFTER_CAP_MS, 24 * H);
    assert.equal(retryDelayMs(1, schedule, middle, 10), 2000);
    assert.equal(retryDelayMs(1, schedule, middle, 0), 2000);
    // Retry-After does not add retries: the schedule's length still decides.
    assert.equal(retryDelayMs(3, schedule, middle, 30 * S), null);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2025, 0, 15, 12, 0, 0);

  it('reads delta-seconds', () => {
    assert.equal(parseRetryAfter('120', now), 120 * S);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
  });

  it('reads the three HTTP-date forms, in GMT', () => {
    assert.equal(parseRetryAfter('Wed, 15 Jan 2025 12:01:30 GMT', now), 90 * S);
    assert.equal(parseRetryAfter('Wednesday, 15-Jan-25 13:00:00 GMT', now), H);
    assert.equal(parseRetryAfter('Wed Jan 15 12:00:10 2025', now), 10 * S);
    assert.equal(parseRetryAfter('Sat Feb  1 12:00:00 2025', now), 17 * 24 * H);
  });

  it('is null when absent, malformed or in the past', () => {
    for (const header of [null, undefined, '', '  ', '-5', '1.5', '1e3', 'soon', 'Wed, 15 Jan 2025 11:59:59 GMT', 'Wed, 31 Feb 2025 12:00:00 GMT', 'Wed, 15 Jan 2025 25:00:00 GMT', '2025-01-16T00:00:00Z']) {
      assert.equal(parseRetryAfter(header, now), null, String(header));
    }
  });
});

describe('endpointVerdict', () => {
  const now = Date.UTC(2025, 0, 15);
  const day = 24 * H;
  const verdict = (status: number | null, failingSinceMs: number | null) => endpointVerdict({ status, failingSinceMs, nowMs: now, disableAfterMs: DEFAULT_DISABLE_AFTER_MS });

  it('is ok on any 2xx, even after days of failures', () => {
    assert.equal(DEFAULT_DISABLE_AFTER_MS, 5 * day);
    for (const status of [200, 201, 204, 299]) assert.equal(verdict(status, now - 10 * day), 'ok');
  });

  it('disables at once on 410 Gone', () => {
    assert.equal(verdict(410, null), 'disable_gone');
  });

  it('disables an endpoint failing for 5 days, by status or without an answer', () => {
    for (const status of [null, 301, 400, 404, 429, 500, 503]) {
      assert.equal(verdict(status, null), 'failing', `first failure, ${status}`);
      assert.equal(verdict(status, now - 5 * day + 1), 'failing', `just under, ${status}`);
      assert.equal(verdict(status, now - 5 * day), 'disable_failing', `5 days, ${status}`);
    }
  });
});
