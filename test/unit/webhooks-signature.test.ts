// Webhook signatures against the Standard Webhooks reference implementation (the `standardwebhooks`
// package): what we sign it verifies, and what it signs the SDK's verifyWebhook accepts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '#libs/sdk';
import { generateWebhookSecret, secretBytes, signatureHeader, WEBHOOK_SECRET_PREFIX } from '#libs/webhooks';

const body = JSON.stringify({ type: 'session.completed', data: { session_id: 'ses_1', text: 'héllo ✓' } });
const id = 'msg_2b3c4d';
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The three headers of a delivery, as a plain object. */
const headersOf = (signature: string, timestamp = nowSeconds(), msgId = id) => ({
  'webhook-id': msgId,
  'webhook-timestamp': String(timestamp),
  'webhook-signature': signature,
});

/** The reason verifyWebhook gave, or 'accepted'. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'accepted';
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `not a WebhookVerificationError: ${String(error)}`);
    return error.reason;
  }
}

describe('webhook secrets', () => {
  it('are whsec_ and the base64 of 32 random bytes, a new one each time', () => {
    const secret = generateWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.ok(secret.startsWith(WEBHOOK_SECRET_PREFIX));
    assert.equal(secretBytes(secret).length, 32);
    assert.notEqual(generateWebhookSecret(), secret);
  });

  it('decode with or without the prefix, and refuse what is not canonical base64', () => {
    const secret = generateWebhookSecret();
    assert.deepEqual(secretBytes(secret), secretBytes(secret.slice(WEBHOOK_SECRET_PREFIX.length)));
    for (const bad of ['', 'whsec_', 'whsec_not base64!', 'whsec_abc', 'whsec_abd=', `${secret} `]) {
      assert.throws(() => secretBytes(bad), /whsec_/, JSON.stringify(bad));
    }
  });
});

describe('signatureHeader', () => {
  it('signs as the reference implementation does, and it verifies the delivery', () => {
    const secret = generateWebhookSecret();
    const timestamp = nowSeconds();
    const header = signatureHeader([secret], id, timestamp, body);
    assert.equal(header, new Webhook(secret).sign(id, new Date(timestamp * 1000), body));
    assert.deepEqual(new Webhook(secret).verify(body, headersOf(header, timestamp)), JSON.parse(body));
  });

  it('with two secrets (rotation) gives two entries, each verified by a receiver holding one of them', () => {
    const [oldSecret, newSecret] = [generateWebhookSecret(), generateWebhookSecret()];
    const timestamp = nowSeconds();
    const header = signatureHeader([oldSecret, newSecret], id, timestamp, body);
    assert.equal(header.split(' ').length, 2);
    assert.ok(header.split(' ').every((entry) => entry.startsWith('v1,')));
    for (const secret of [oldSecret, newSecret]) new Webhook(secret).verify(body, headersOf(header, timestamp));
    assert.throws(() => new Webhook(generateWebhookSecret()).verify(body, headersOf(header, timestamp)));
  });

  it('refuses to sign without a secret or with a fractional timestamp', () => {
    assert.throws(() => signatureHeader([], id, nowSeconds(), body), /at least one secret/);
    assert.throws(() => signatureHeader([generateWebhookSecret()], id, 1.5, body), /whole Unix seconds/);
  });
});

describe('verifyWebhook (SDK)', () => {
  const secret = generateWebhookSecret();
  const reference = new Webhook(secret);
  const signedNow = (payload = body, timestamp = nowSeconds()) => headersOf(reference.sign(id, new Date(timestamp * 1000), payload), timestamp);

  it('accepts what the reference implementation signs, as a plain object or fetch Headers, and returns the parsed body', async () => {
    const headers = signedNow();
    assert.deepEqual(await verifyWebhook(secret, headers, body), JSON.parse(body));
    assert.deepEqual(await verifyWebhook(secret, new Headers(headers), body), JSON.parse(body));
    // Header names are case-insensitive in a plain object too; a secret works without its prefix.
    const shouted = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));
    assert.deepEqual(await verifyWebhook(secret.slice(WEBHOOK_SECRET_PREFIX.length), shouted, body), JSON.parse(body));
  });

  it('refuses an altered body, a wrong secret and an altered id or signature', async () => {
    const headers = signedNow();
    assert.equal(await outcome(verifyWebhook(secret, headers, body.replace('ses_1', 'ses_2'))), 'bad_signature');
    assert.equal(await outcome(verifyWebhook(generateWebhookSecret(), headers, body)), 'bad_signature');
    assert.equal(await outcome(verifyWebhook(secret, { ...headers, 'webhook-id': 'msg_other' }, body)), 'bad_signature');
    assert.equal(await outcome(verifyWebhook(secret, { ...headers, 'webhook-signature': 'v1,AAAA' }, body)), 'bad_signature');
    assert.equal(await outcome(verifyWebhook(secret, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, body)), 'bad_signature');
  });

  it('refuses a timestamp outside the tolerance, either way, and a malformed one', async () => {
    const stale = signedNow(body, nowSeconds() - 301);
    assert.equal(await outcome(verifyWebhook(secret, stale, body)), 'timestamp_out_of_tolerance');
    assert.equal(await outcome(verifyWebhook(secret, signedNow(body, nowSeconds() + 400), body)), 'timestamp_out_of_tolerance');
    assert.equal(await outcome(verifyWebhook(secret, stale, body, { toleranceSeconds: 600 })), 'accepted');
    const at = 1_700_000_000;
    assert.equal(await outcome(verifyWebhook(secret, signedNow(body, at), body, { now: () => at * 1000 + 299_000 })), 'accepted');
    assert.equal(await outcome(verifyWebhook(secret, signedNow(body, at), body, { now: () => at * 1000 + 301_000 })), 'timestamp_out_of_tolerance');
    assert.equal(await outcome(verifyWebhook(secret, { ...signedNow(), 'webhook-timestamp': 'soon' }, body)), 'timestamp_out_of_tolerance');
  });

  it('refuses missing headers, a malformed secret and a body that is not JSON', async () => {
    const headers = signedNow();
    for (const name of Object.keys(headers)) {
      const without: Record<string, string> = { ...headers };
      delete without[name];
      assert.equal(await outcome(verifyWebhook(secret, without, body)), 'missing_headers', name);
    }
    assert.equal(await outcome(verifyWebhook('whsec_not base64', headers, body)), 'invalid_secret');
    assert.equal(await outcome(verifyWebhook([], headers, body)), 'invalid_secret');
    assert.equal(await outcome(verifyWebhook(secret, signedNow('not json'), 'not json')), 'invalid_body');
  });

  it('during a rotation, accepts a delivery signed with either secret, or both', async () => {
    const [oldSecret, newSecret] = [generateWebhookSecret(), generateWebhookSecret()];
    const timestamp = nowSeconds();
    const both = headersOf(signatureHeader([oldSecret, newSecret], id, timestamp, body), timestamp);
    const newOnly = headersOf(signatureHeader([newSecret], id, timestamp, body), timestamp);
    assert.equal(await outcome(verifyWebhook(oldSecret, both, body)), 'accepted');
    assert.equal(await outcome(verifyWebhook(newSecret, both, body)), 'accepted');
    assert.equal(await outcome(verifyWebhook([oldSecret, newSecret], newOnly, body)), 'accepted');
    assert.equal(await outcome(verifyWebhook([generateWebhookSecret(), newSecret], both, body)), 'accepted');
    assert.equal(await outcome(verifyWebhook(oldSecret, newOnly, body)), 'bad_signature');
    // The entries sent as two header lines: Headers joins them with ", ".
    const split = new Headers({ 'webhook-id': id, 'webhook-timestamp': String(timestamp) });
    for (const entry of both['webhook-signature'].split(' ')) split.append('webhook-signature', entry);
    assert.equal(await outcome(verifyWebhook(newSecret, split, body)), 'accepted');
  });
});
