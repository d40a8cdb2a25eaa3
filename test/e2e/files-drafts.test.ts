import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { executableBytes, PNG, pdfWithText, upload, uploadDraft } from '../support/files.js';
import { API, http } from '../support/http.js';
import { newProductUser, signToken, until } from '../support/identity.js';

const MiB = 1024 * 1024;
const FILE_ID = /^[0-9a-f]{32}$/;
const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

/** Every file under the storage root, relative to it. */
function storedFiles(): string[] {
  if (!existsSync(env.storageDir)) return [];
  return readdirSync(env.storageDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(env.storageDir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}

/**
 * Draft blobs written since `before` that no files row accounts for. Other test files upload and
 * delete concurrently, so counting the whole root races them; but an upload reserves its row
 * before writing its blob, and a deletion removes the blob before the row, so a draft blob that
 * still exists after its row was looked for, with no row, was stored by a refused upload.
 */
async function strayDraftBlobs(before: string[]): Promise<string[]> {
  const known = new Set(before);
  const added = storedFiles().filter((file) => file.startsWith('drafts/') && !known.has(file));
  if (added.length === 0) return [];
  const ids = added.map((file) => file.slice('drafts/'.length));
  const rows = await query<{ id: string }>(`SELECT id FROM files WHERE id = ANY($1::text[])`, [ids]);
  const withRow = new Set(rows.map((row) => row.id));
  return added.filter((file) => !withRow.has(file.slice('drafts/'.length)) && existsSync(path.join(env.storageDir, file)));
}

describe('files: drafts', () => {
  it('uploads a draft, reads it back, deletes it (row and bytes)', async () => {
    const bytes = pdfWithText('Quarterly numbers');
    const res = await upload(bytes, 'report.pdf', { contentType: 'text/plain' });
    assert.equal(res.status, 201, res.text);
    const draft = res.body;
    assert.match(draft.id, FILE_ID);
    assert.equal(draft.object, 'file');
    assert.equal(draft.filename, 'report.pdf');
    assert.equal(draft.bytes, bytes.length);
    assert.equal(draft.mime_type, 'application/pdf', 'the type comes from the bytes, not the part\'s Content-Type');
    assert.equal(draft.status, 'draft');
    assert.equal(draft.expires_at - draft.created_at, 24 * 3600, 'drafts live 24 h');
    assert.ok(Math.abs(draft.created_at - Date.now() / 1000) < 60);
    assert.equal(draft.yuxi.sha256, sha256(bytes));

    const stored = path.join(env.storageDir, 'drafts', draft.id);
    assert.ok(existsSync(stored), 'the bytes are stored under a key made from the id');
    assert.equal(sha256(readFileSync(stored)), draft.yuxi.sha256);

    const read = await http(`${API}/files/${draft.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, draft);
    const onReplica2 = await fetch(`${env.apiUrl2}${API}/files/${draft.id}`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(onReplica2.status, 200, 'every replica reads the same storage');

    const deleted = await http(`${API}/files/${draft.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { id: draft.id, object: 'file.deleted', deleted: true });
    assert.equal(existsSync(stored), false, 'the bytes are gone');
    assert.equal((await query(`SELECT 1 FROM files WHERE id = $1`, [draft.id])).length, 0, 'the row is gone');
    assert.equal((await http(`${API}/files/${draft.id}`)).status, 404);
    assert.equal((await http(`${API}/files/${draft.id}`, { method: 'DELETE' })).status, 404);
  });

  it('accepts Markdown, CSV, JSON, plain text and a PNG, typing each from its bytes and name, not the declared content type', async () => {
    const cases: [Uint8Array | string, string, string][] = [
      [PNG, 'pixel.png', 'image/png'],
      ['# Notes\n\n- one\n', 'notes.md', 'text/markdown'],
      ['name,qty\nbolts,3\n', 'parts.csv', 'text/csv'],
      ['{"ok":true}', 'data.json', 'application/json'],
      ['季度报告：完成\n', '报告.txt', 'text/plain'],
    ];
    for (const [bytes, filename, mimeType] of cases) {
      const draft = await uploadDraft(bytes, filename, { contentType: 'application/x-msdownload' });
      assert.equal(draft.mime_type, mimeType, filename);
      assert.equal(draft.filename, filename);
    }
  });

  it('answers 404 for another caller\'s draft, an unknown id and a malformed id', async () => {
    const draft = await uploadDraft('mine only', 'private.txt');
    const stranger = await signToken();
    for (const method of ['GET', 'DELETE']) {
      const res = await http(`${API}/files/${draft.id}`, { method, key: stranger });
      assert.equal(res.status, 404, `${method} by another principal`);
      assert.equal(res.body.error.code, 'not_found');
    }
    assert.equal((await http(`${API}/files/${draft.id}`)).status, 200, 'still there for its owner');
    assert.equal((await http(`${API}/files/0123456789abcdef0123456789abcdef`)).status, 404);
    assert.equal((await http(`${API}/files/..%2F..%2Fetc%2Fpasswd`)).status, 404);
    assert.equal((await http(`${API}/files/not-a-file-id`, { method: 'DELETE' })).status, 404);
    const anonymous = await upload('x', 'a.txt', { token: 'yuxi_invalid' });
    assert.equal(anonymous.status, 401);
  });

  it('takes files up to exactly 5 MiB; one byte more is 413 file_too_large and stores nothing', async () => {
    const owner = await signToken();
    const before = storedFiles();
    const exact = await upload('a'.repeat(5 * MiB), 'exact.txt', { token: owner });
    assert.equal(exact.status, 201, exact.text);
    assert.equal(exact.body.bytes, 5 * MiB);
    const over = await upload('a'.repeat(5 * MiB + 1), 'over.txt', { token: owner });
    assert.equal(over.status, 413);
    assert.equal(over.body.error.code, 'file_too_large');
    assert.equal(over.body.error.details.limit_bytes, 5 * MiB);
    const much = await upload(Buffer.alloc(12 * MiB, 0x61), 'much.txt', { token: owner });
    assert.equal(much.status, 413);
    const rows = await query<{ id: string }>(`SELECT id FROM files WHERE owner_id = (SELECT owner_id FROM files WHERE id = $1)`, [exact.body.id]);
    assert.deepEqual(rows.map((row) => row.id), [exact.body.id], 'only the accepted file has a row');
    assert.ok(existsSync(path.join(env.storageDir, 'drafts', exact.body.id)), 'the accepted file is stored');
    assert.deepEqual(await strayDraftBlobs(before), [], 'no refused upload left bytes behind');
  });

  it('refuses a renamed executable (415) and a mismatched extension (422), storing nothing', async () => {
    const before = storedFiles();
    for (const name of ['report.pdf', 'notes.txt', 'tool']) {
      const res = await upload(executableBytes(), name, { contentType: 'application/pdf' });
      assert.equal(res.status, 415, `${name}: ${res.text}`);
      assert.equal(res.body.error.code, 'file_type_not_allowed');
      assert.equal(res.body.error.details.detected_type, 'application/x-elf');
    }
    const mismatches: [Uint8Array | string, string][] = [
      [PNG, 'invoice.pdf'],
      ['just words', 'photo.jpg'],
      ['{"unterminated": ', 'data.json'],
    ];
    for (const [bytes, name] of mismatches) {
      const res = await upload(bytes, name, { contentType: 'image/jpeg' });
      assert.equal(res.status, 422, `${name}: ${res.text}`);
      assert.equal(res.body.error.code, 'file_type_mismatch', name);
    }
    const script = await upload('#!/bin/sh\necho pwned\n', 'setup.sh');
    assert.equal(script.status, 415);
    assert.equal(script.body.error.code, 'file_type_not_allowed');
    assert.deepEqual(await strayDraftBlobs(before), [], 'nothing refused was stored');
  });

  it('sanitises path-traversal filenames; the bytes land under the storage root only', async () => {
    const names: [string, string][] = [
      ['../../../../etc/passwd.txt', 'passwd.txt'],
      ['..\\..\\Windows\\win.ini.txt', 'win.ini.txt'],
      ['/tmp/../../root/.ssh/authorized_keys.txt', 'authorized_keys.txt'],
      ['..', 'file'],
      ['.env', 'env'],
    ];
    for (const [raw, expected] of names) {
      const content = `traversal attempt ${raw}`;
      const draft = await uploadDraft(content, raw);
      assert.equal(draft.filename, expected, raw);
      const stored = path.join(env.storageDir, 'drafts', draft.id);
      assert.equal(readFileSync(stored, 'utf8'), content, 'stored under its id');
    }
    // Workspaces' content-addressed blobs (`blobs/<sha256>`) are server-made keys too.
    // A write in flight elsewhere (the worker copying an attachment) shows as its key plus the
    // local driver's temporary suffix, still a server-made name.
    const escaped = storedFiles().filter((file) => !/^(drafts\/[0-9a-f]{32}|inline\/[0-9a-f]{32}|sessions\/[0-9a-f-]{36}\/files\/[0-9a-f]{32}|blobs\/[0-9a-f]{64})(\.tmp-[0-9a-f]{12})?$/.test(file));
    assert.deepEqual(escaped, [], 'every stored file has a server-generated key');
    for (const outside of ['etc/passwd.txt', 'passwd.txt', path.join('..', 'etc', 'passwd.txt')]) {
      assert.equal(existsSync(path.join(env.storageDir, outside)), false, outside);
    }
  });

  it('refuses a body that is not one file in the field "file"', async () => {
    const json = await http(`${API}/files`, { body: { file: 'hello' } });
    assert.equal(json.status, 415);
    assert.equal(json.body.error.code, 'unsupported_media_type');
    const wrongField = await upload('hello', 'a.txt', { field: 'document' });
    assert.equal(wrongField.status, 422);
    assert.equal(wrongField.body.error.code, 'validation_failed');
    const empty = await upload('', 'empty.txt');
    assert.equal(empty.status, 422);
    assert.equal(empty.body.error.details.fields[0].field, 'file');
    const noFile = await fetch(`${env.apiUrl}${API}/files`, { method: 'POST', headers: { authorization: `Bearer ${env.apiKey}` }, body: new FormData() });
    assert.equal(noFile.status, 422);
  });

  it('enforces the per-owner quota across replicas', async () => {
    // The file-limits replica allows 1 MiB per owner; a fresh user's 700 KiB uploaded elsewhere counts there too.
    const user = await signToken();
    await uploadDraft('a'.repeat(700 * 1024), 'first.txt', { token: user });
    const refused = await upload('b'.repeat(400 * 1024), 'second.txt', { token: user, baseUrl: env.apiUrlFileLimits });
    assert.equal(refused.status, 413, refused.text);
    assert.equal(refused.body.error.code, 'file_quota_exceeded');
    assert.equal(refused.body.error.details.quota_bytes, MiB);
    assert.equal(refused.body.error.details.used_bytes, 700 * 1024);
    const fits = await upload('c'.repeat(200 * 1024), 'third.txt', { token: user, baseUrl: env.apiUrlFileLimits });
    assert.equal(fits.status, 201, fits.text);
    const other = await upload('d'.repeat(400 * 1024), 'other.txt', { token: await signToken(), baseUrl: env.apiUrlFileLimits });
    assert.equal(other.status, 201, 'another owner has its own quota');
  });

  it('counts the uploads of an app\'s end users on the account of the key\'s owner: a new end-user id brings no fresh quota', async () => {
    const { key } = await newProductUser('quota-app-owner', { app_id: 'quota-app' });
    const first = await upload('a'.repeat(700 * 1024), 'alice.txt', { token: key.secret, endUserId: 'alice' });
    assert.equal(first.status, 201, first.text);
    const refused = await upload('b'.repeat(400 * 1024), 'bob.txt', { token: key.secret, endUserId: 'bob', baseUrl: env.apiUrlFileLimits });
    assert.equal(refused.status, 413, refused.text);
    assert.equal(refused.body.error.code, 'file_quota_exceeded');
    assert.equal(refused.body.error.details.used_bytes, 700 * 1024, 'alice\'s bytes count for bob');
    assert.equal(refused.body.error.details.drafts, 0, 'drafts are counted per end user');
    const small = await upload('c'.repeat(200 * 1024), 'bob.txt', { token: key.secret, endUserId: 'bob', baseUrl: env.apiUrlFileLimits });
    assert.equal(small.status, 201, small.text);
    // Bob's draft is still his own: alice cannot read it.
    const foreign = await upload('d', 'x.txt', { token: key.secret, endUserId: 'alice' });
    assert.equal(foreign.status, 201);
    const read = await fetch(`${env.apiUrl}${API}/files/${small.body.id}`, { headers: { authorization: `Bearer ${key.secret}`, 'x-end-user-id': 'alice' } });
    assert.equal(read.status, 404);
  });

  it('deletes an expired draft, row and bytes, by the worker\'s sweep', async () => {
    // The file-limits replica gives drafts a 2 s life; the test stack sweeps every 500 ms.
    const owner = await signToken();
    const draft = await uploadDraft('short-lived', 'ephemeral.txt', { baseUrl: env.apiUrlFileLimits, token: owner });
    assert.equal(draft.expires_at - draft.created_at, 2);
    const stored = path.join(env.storageDir, 'drafts', draft.id);
    assert.ok(existsSync(stored));
    const gone = await until(async () => ((await http(`${API}/files/${draft.id}`, { key: owner })).status === 404 ? true : undefined), { attempts: 100, intervalMs: 200 });
    assert.equal(gone, true, 'the draft is gone within 20 s');
    const swept = await until(async () => ((await query(`SELECT 1 FROM files WHERE id = $1`, [draft.id])).length === 0 && !existsSync(stored) ? true : undefined), {
      attempts: 100,
      intervalMs: 200,
    });
    assert.equal(swept, true, 'the sweep removed its row and its bytes');
  });
});
