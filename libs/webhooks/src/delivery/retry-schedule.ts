// When a failed webhook delivery is tried again, and when an endpoint is given up on. Pure
// functions of their arguments (the clock and the randomness are passed in) so the worker's
// decisions can be tested without waiting.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The delays before retries 1 to 7 (Standard Webhooks' suggested schedule): about 27.5 h in all. */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]);

/** An endpoint whose deliveries have all failed for this long is disabled. */
export const DEFAULT_DISABLE_AFTER_MS = 5 * DAY;

/** The longest a Retry-After may hold a retry back: a receiver cannot park a delivery for weeks. */
export const RETRY_AFTER_CAP_MS = DAY;

/** Each scheduled delay moves by up to this fraction either way, so retries of many deliveries spread out. */
const JITTER = 0.1;

const UNIT_MS: Record<string, number> = { ms: 1, s: SECOND, m: MINUTE, h: HOUR, d: DAY };

/**
 * A schedule as written in WEBHOOK_RETRY_SCHEDULE: comma-separated durations, each a number and
 * a unit (ms, s, m, h, d), e.g. `1s,2s,500ms,5m,2h`. Empty (or blank) is the default schedule.
 * Throws, naming the faulty item, on anything else: a typo must stop the start, not retry at random.
 */
export function parseRetrySchedule(text: string): number[] {
  if (text.trim() === '') return [...DEFAULT_RETRY_SCHEDULE_MS];
  return text.split(',').map((raw, index) => {
    const item = raw.trim();
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(item);
    if (!match) {
      throw new Error(`retry schedule: item ${index + 1} (${JSON.stringify(item)}) is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 500ms, 5m, 2h, separated by commas`);
    }
    const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]]);
    if (!Number.isSafeInteger(ms)) throw new Error(`retry schedule: item ${index + 1} (${JSON.stringify(item)}) is too long`);
    return ms;
  });
}

/**
 * How long to wait before the next retry, or null when the schedule is used up.
 * `retriesSoFar` counts retries already made (0 after the first attempt failed), so a schedule of
 * n delays allows n retries. The scheduled delay moves by up to ±10 % (`random` in [0, 1)). A
 * Retry-After asking for longer wins, capped at RETRY_AFTER_CAP_MS; it never shortens the delay,
 * since a receiver that is down should not be able to speed the retries up.
 */
export function retryDelayMs(retriesSoFar: number, schedule: readonly number[], random: () => number, retryAfterMs: number | null): number | null {
  if (!Number.isInteger(retriesSoFar) || retriesSoFar < 0 || retriesSoFar >= schedule.length) return null;
  const scheduled = schedule[retriesSoFar];
  const jittered = Math.max(0, Math.round(scheduled * (1 + (random() * 2 - 1) * JITTER)));
  if (retryAfterMs === null || !(retryAfterMs > jittered)) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, RETRY_AFTER_CAP_MS));
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
// The three forms of HTTP-date (RFC 9110 §5.6.7), which recipients must all accept:
// IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", rfc850 "Sunday, 06-Nov-94 08:49:37 GMT" and
// asctime "Sun Nov  6 08:49:37 1994". Parsed here rather than by Date.parse, which also takes
// "1.5" or "2024" as dates and reads asctime (no zone) as local time.
const IMF_FIXDATE = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const RFC850_DATE = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/i;
const ASCTIME_DATE = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i;

/** The instant of an HTTP-date, in ms, or null when it is not one (or names a day that does not exist). */
function parseHttpDate(text: string, nowMs: number): number | null {
  let parts: [day: string, month: string, year: number, hour: string, minute: string, second: string];
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(text))) {
    parts = [match[1], match[2], Number(match[3]), match[4], match[5], match[6]];
  } else if ((match = RFC850_DATE.exec(text))) {
    // A two-digit year more than 50 years ahead is the last such year in the past (RFC 9110).
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = nowYear - (nowYear % 100) + Number(match[3]);
    if (year > nowYear + 50) year -= 100;
    parts = [match[1], match[2], year, match[4], match[5], match[6]];
  } else if ((match = ASCTIME_DATE.exec(text))) {
    parts = [match[2].trim(), match[1], Number(match[6]), match[3], match[4], match[5]];
  } else {
    return null;
  }
  const [day, monthName, year, hour, minute, second] = parts;
  const month = MONTHS.indexOf(monthName.toLowerCase());
  if (month < 0 || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60) return null;
  const ms = Date.UTC(year, month, Number(day), Number(hour), Number(minute), Math.min(Number(second), 59));
  // Date.UTC rolls 31 Feb over into March: such a date is malformed, not a valid one.
  return new Date(ms).getUTCDate() === Number(day) ? ms : null;
}

/**
 * A Retry-After header as a wait in ms from `nowMs`: delta-seconds ("120") or an HTTP-date.
 * Null when absent, malformed or in the past, so that the schedule alone decides.
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | null {
  const text = header?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isFinite(seconds) ? seconds * SECOND : null;
  }
  const at = parseHttpDate(text, nowMs);
  if (at === null) return null;
  const wait = at - nowMs;
  return wait >= 0 ? wait : null;
}

/** What a delivery's outcome means for its endpoint. */
export type EndpointVerdict = 'ok' | 'failing' | 'disable_gone' | 'disable_failing';

/**
 * The endpoint's fate after a delivery attempt: `status` is the HTTP status, or null when no
 * answer came (connection refused, timeout, blocked address). A 2xx is success; 410 Gone means
 * the receiver asked to be removed, at once; any other outcome disables the endpoint once it has
 * failed without a success in between for `disableAfterMs` (`failingSinceMs` null: this failure
 * is the first).
 */
export function endpointVerdict(input: { status: number | null; failingSinceMs: number | null; nowMs: number; disableAfterMs: number }): EndpointVerdict {
  const { status, failingSinceMs, nowMs, disableAfterMs } = input;
  if (status !== null && status >= 200 && status <= 299) return 'ok';
  if (status === 410) return 'disable_gone';
  const failingFor = nowMs - (failingSinceMs ?? nowMs);
  return failingFor >= disableAfterMs ? 'disable_failing' : 'failing';
}
