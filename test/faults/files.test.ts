// Fault scenario f1: a worker dies (kill -9) in the middle of preparing an input's attachments —
// blocked on the object store, reading the upload — while the input and a follow-up wait. The
// preparation must be finished by another worker's recovery sweep, the input must run before the
// follow-up, the file must land in the workdir exactly as uploaded, and the durable invariants
// must hold. File storage is S3 (s3rver, in this process) behind a proxy that can hold requests.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import S3rver from 's3rver';
import { createFileStorage, type FileStorage, S3FileStorage, storageKeys } from '#libs/files';
import { API, newKey } from './client.js';
import { assertInvariants, Cluster, echoOf, type FaultInfra, startFaultInfra, waitQuiescent, waitUntil, within } from './harness.js';
import { StallingProxy } from './stalling-proxy.js';
import { inputsInOrder } from './steps.js';

const BUCKET = 'fault-files';
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

describe('faults: files', () => {
  let infra: FaultInfra;
  let s3: S3rver;
  let s3Dir: string;
  let proxy: StallingProxy;
  /** Direct access to the same bucket (not through the proxy), to check what is stored. */
  let storage: FileStorage;

  before(async () => {
    infra = await startFaultInfra('files');
    s3Dir = await mkdtemp(path.join(os.tmpdir(), 'yuxi-fault-s3-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET }] });
    const { port } = await s3.run();
    proxy = await StallingProxy.start(port);
    storage = createFileStorage({ driver: 's3', bucket: BUCKET, region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, credentials: CREDENTIALS, forcePathStyle: true, keyPrefix: '' });
  });
  after(async () => {
    (storage as S3FileStorage | undefined)?.destroy();
    await proxy?.stop();
    await s3?.close();
    await infra?.stop();
    if (s3Dir) await rm(s3Dir, { recursive: true, force: true });
  });

  it('f1. worker kill -9 mid-preparation: another worker\'s sweep finishes it, the input runs before the follow-up', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'f1-preparation-kill9', {
      apis: 1,
      workers: 1,
      env: {
        STORAGE_DRIVER: 's3',
        S3_BUCKET: BUCKET,
        S3_ENDPOINT: proxy.url,
        S3_FORCE_PATH_STYLE: 'true',
        S3_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        S3_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      },
    });
    try {
      const api = cluster.api();
      const content = `the attached report, ${newKey('content')}\n`;
      const form = new FormData();
      form.append('file', new Blob([content]), 'report.txt');
      const uploaded = await fetch(`${api.baseUrl}${API}/files`, { method: 'POST', headers: { authorization: `Bearer ${api.key}` }, body: form });
      assert.equal(uploaded.status, 201);
      const draft = (await uploaded.json()) as { id: string; yuxi: { sha256: string } };

      const session = await api.createSession();
      proxy.hold();
      const withFile = await api.postEvent(session.id, { type: 'agent.session.input.message', input: 'with the report', yuxi: { mode: 'follow_up', attachment_file_ids: [draft.id] } });
      assert.equal(withFile.status, 202, 'accepted at once');
      const followUp = await api.send(session.id, 'plain follow-up');

      // The worker is now blocked reading the upload from the store: mid-preparation.
      const request = await within('the worker to request the upload', proxy.heldRequest((text) => text.startsWith(`GET /${BUCKET}/${storageKeys.draft(draft.id)}`)), 15_000);
      t.diagnostic(`held: ${request.split('\r\n')[0]}`);
      const [victim] = cluster.workers;
      cluster.signal(victim!, 'SIGKILL');
      assert.ok(await cluster.waitExit(victim!, 5_000), 'the worker is gone');

      const { rows: stuck } = await infra.db.query(`SELECT attachment_status, status FROM inputs WHERE id = $1`, [withFile.body.input_id]);
      assert.deepEqual(stuck[0], { attachment_status: 'preparing', status: 'pending' }, 'the preparation did not finish');

      proxy.release();
      const killedAt = Date.now();
      await cluster.addWorker();
      await waitUntil(
        'the preparation to be finished by the new worker',
        async () => (await infra.db.query(`SELECT 1 FROM inputs WHERE id = $1 AND attachment_status = 'ready'`, [withFile.body.input_id])).rows.length === 1,
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      t.diagnostic(`ready ${Date.now() - killedAt} ms after the release`);
      await waitQuiescent(infra, [session.id], 30_000);

      const inputs = await inputsInOrder(infra, session.id);
      assert.deepEqual(
        inputs.map((i) => [i.id, i.status, i.turn_status]),
        [
          [withFile.body.input_id, 'consumed', 'completed'],
          [followUp.input_id, 'consumed', 'completed'],
        ],
      );
      assert.ok(inputs[0]!.turn_seq! < inputs[1]!.turn_seq!, 'the input with the file ran first');
      const turns = await api.turns(session.id);
      assert.equal(turns.length, 2, 'each input ran exactly once');

      const stored = await storage.get(storageKeys.session(session.id, draft.id));
      assert.equal(createHash('sha256').update(stored).digest('hex'), draft.yuxi.sha256, 'the workdir holds the uploaded bytes');
      await waitUntil('the upload to be cleaned up', async () => !(await storage.exists(storageKeys.draft(draft.id))), { timeoutMs: 15_000, intervalMs: 200 });
      const { rows: files } = await infra.db.query(`SELECT status, draft_key FROM files WHERE id = $1`, [draft.id]);
      assert.deepEqual(files[0], { status: 'ready', draft_key: null });
      const items = await api.request(`${API}/sessions/${session.id}/items?order=asc&limit=100`);
      const answers = items.body.data.filter((i: any) => i.role === 'assistant').map((i: any) => i.content[0].text);
      assert.equal(answers.length, 2);
      assert.ok(answers[0].startsWith(echoOf('with the report')), answers[0]);
      await assertInvariants(infra, [session.id], (m) => t.diagnostic(m));
    } finally {
      proxy.release();
      await cluster.stop();
    }
  });
});
