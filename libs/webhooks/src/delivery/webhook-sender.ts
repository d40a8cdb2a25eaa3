import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { WebhookAttemptOutcome } from '../webhook.dto.js';
import { isPublicAddress } from '#libs/outbound';

/** What one POST came to. */
export interface SendResult {
  outcome: WebhookAttemptOutcome;
  statusCode: number | null;
  /** From the request to the response head, or to the failure. */
  durationMs: number;
  responseExcerpt: string;
  error: string | null;
  /** The receiver's Retry-After header, as sent. */
  retryAfter: string | null;
}

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

const EXCERPT_CHARS = 1024;
const USER_AGENT = 'yuxi-webhooks/1';

/**
 * POSTs one signed delivery. Redirects are not followed (a 3xx is a failed attempt: following one
 * could lead to an address the guard would refuse, and the receiver's URL is what its owner
 * registered). The address guard runs as the socket's DNS lookup, so what is checked is what is
 * connected to. The whole attempt, the excerpt of the body included, is bounded by `timeoutMs`.
 */
export class WebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(
    private readonly lookup: LookupFunction,
    private readonly allowPrivate: boolean,
  ) {
    // Kept-alive sockets were connected to an address the guard allowed.
    // An idle one is closed after a few seconds: before most receivers close it, which would fail the next POST on it.
    const options = { keepAlive: true, maxSockets: 64, timeout: 4_000 };
    this.agents = { http: new http.Agent(options), https: new https.Agent(options) };
  }

  send(request: SendRequest): Promise<SendResult> {
    const refused = (error: string): Promise<SendResult> => Promise.resolve({ outcome: 'blocked', statusCode: null, durationMs: 0, responseExcerpt: '', error, retryAfter: null });
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return refused('the endpoint URL is not valid');
    }
    // A literal address is connected to without a lookup, so the guard checks it here (an
    // endpoint stored while private networks were allowed, say).
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.allowPrivate && isIP(literal) !== 0 && !isPublicAddress(literal)) return refused('the endpoint resolves to an address that is not allowed');
    const secure = url.protocol === 'https:';
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      let statusCode: number | null = null;
      let headMs = 0;
      let retryAfter: string | null = null;
      let excerpt = '';
      const finish = (result: Omit<SendResult, 'durationMs' | 'retryAfter'>, durationMs = elapsed()) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs, retryAfter });
      };
      const timer = setTimeout(() => {
        // After the head: the status decided; the excerpt is what arrived.
        if (statusCode !== null) finish(outcomeOf(statusCode, excerpt), headMs);
        else finish({ outcome: 'timeout', statusCode: null, responseExcerpt: '', error: `no response within ${request.timeoutMs} ms` });
        req.destroy();
      }, request.timeoutMs);
      const req = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.agents.https : this.agents.http,
        lookup: this.lookup,
        headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, 'content-length': String(Buffer.byteLength(request.body)), ...request.headers },
      });
      req.on('response', (res) => {
        statusCode = res.statusCode ?? 0;
        headMs = elapsed();
        const header = res.headers['retry-after'];
        retryAfter = typeof header === 'string' ? header : null;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          excerpt += chunk;
          if (excerpt.length >= EXCERPT_CHARS) {
            finish(outcomeOf(statusCode!, excerpt), headMs);
            res.destroy();
          }
        });
        res.on('end', () => finish(outcomeOf(statusCode!, excerpt), headMs));
        res.on('error', () => finish(outcomeOf(statusCode!, excerpt), headMs));
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (statusCode !== null) return finish(outcomeOf(statusCode, excerpt), headMs);
        const blocked = error.code === 'EWEBHOOKBLOCKED';
        finish({ outcome: blocked ? 'blocked' : 'network_error', statusCode: null, responseExcerpt: '', error: truncate(blocked ? error.message : `${error.code ?? 'error'}: ${error.message}`, 500) });
      });
      req.end(request.body);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

function outcomeOf(statusCode: number, body: string): Omit<SendResult, 'durationMs' | 'retryAfter'> {
  const ok = statusCode >= 200 && statusCode < 300;
  return {
    outcome: ok ? 'succeeded' : 'failed',
    statusCode,
    responseExcerpt: truncate(body, EXCERPT_CHARS),
    error: ok ? null : statusCode >= 300 && statusCode < 400 ? 'redirects are not followed' : null,
  };
}

/** At most `max` characters, and none Postgres text cannot hold (a NUL of a binary answer would fail the attempt's record, and the delivery would be sent again and again). */
function truncate(text: string, max: number): string {
  return (text.length <= max ? text : text.slice(0, max)).replaceAll('\u0000', '\uFFFD');
}
