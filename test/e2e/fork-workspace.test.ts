import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, http, newKey } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';
import { completedFollowUp } from '../support/scenarios.js';

// A fork of a session with an environment, end to end on the real stack (real bubblewrap
// sandboxes, the scripted model): the fork's own turns see the workspace as it was at the fork
// point (through the file tools' results the model gets), writes in either never show in the
// other, the fork copies no blob, a fork from before the workspace existed sets it up itself, and a
// project session's fork branches the project's workspace as the project's sessions had left it.

const tool = (name: string, args: object): string => `[[tool:${name} ${JSON.stringify(args)}]]`;
type Live = { id: string; stream: SseStream; body: any };

describe('fork: the workspace as of the fork point', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  async function live(body: any): Promise<Live> {
    const stream = await SseStream.open(body.id);
    streams.push(stream);
    return { id: body.id, stream, body };
  }

  /** A session with a workspace, its stream open before its first message. */
  async function hosted(environment: object = {}, fields: object = {}): Promise<Live> {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('env'), body: { agent_id: 'default-chatbot', environment: { type: 'openai_hosted', ...environment }, ...fields } });
    assert.equal(res.status, 201, res.text);
    return live(res.body);
  }

  async function fork(source: Live, body: object): Promise<Live> {
    const res = await http(`${API}/sessions/${source.id}/fork`, { idempotencyKey: newKey('fork'), body });
    assert.equal(res.status, 201, res.text);
    return live(res.body);
  }

  const turn = completedFollowUp;

  /** The turn's tool calls in order: [name, the output the model got, success]. */
  async function toolResults(session: Live, end: SseEvent): Promise<[string, string, boolean][]> {
    const items = (await http(`${API}/sessions/${session.id}/turns/${end.data.turn_id}/items?order=asc&limit=100`)).body.data;
    return items
      // A shell call is a command_execution item; the other tools' are function_call items.
      .filter((i: any) => i.type === 'function_call' || i.type === 'command_execution')
      .map((call: any) => {
        const output = items.find((i: any) => i.type === 'function_call_output' && i.call_id === call.call_id);
        assert.ok(output, `an output for ${call.name}`);
        return [call.name, output.output, output.yuxi.success];
      });
  }

  const blobCount = async (): Promise<number> => (await readdir(path.join(env.storageDir, 'blobs')).catch(() => [])).filter((name) => !name.includes('.tmp-')).length;
  const workspaceOf = async (workdirId: string) =>
    (await query<{ head_version_id: string; base_version_id: string | null; setup_state: string }>('SELECT head_version_id, base_version_id, setup_state FROM workspaces WHERE workdir_id = $1', [workdirId]))[0];
  const artifactPaths = async (session: Live): Promise<string[]> => (await http(`${API}/sessions/${session.id}/artifacts?limit=100`)).body.data.map((a: any) => a.path).sort();
  const look = `${tool('list_files', {})} ${tool('read_file', { path: 'a.txt' })} ${tool('read_file', { path: 'b.txt' })}`;

  it('after turn 1 and before turn 2 see a.txt and not b.txt; writes in either never show in the other; no blob and no version is copied', async () => {
    const source = await hosted();
    const t1 = await turn(source, tool('write_file', { path: 'a.txt', content: 'alpha\n' }));
    const t2 = await turn(source, tool('write_file', { path: 'b.txt', content: 'beta\n' }));
    const [asOfT1] = await query<{ id: string }>('SELECT id FROM workspace_versions WHERE turn_id = $1 ORDER BY seq DESC LIMIT 1', [t1.data.turn_id]);

    const blobs = await blobCount();
    const [versions] = await query<{ n: number }>('SELECT count(*)::int AS n FROM workspace_versions');
    const afterT1 = await fork(source, { after_turn_id: t1.data.turn_id });
    const beforeT2 = await fork(source, { before_turn_id: t2.data.turn_id });
    for (const child of [afterT1, beforeT2]) {
      const [row] = await query<{ workdir_id: string }>('SELECT workdir_id FROM sessions WHERE id = $1', [child.id]);
      assert.equal(row!.workdir_id, child.id, 'a fork has its own workdir');
      assert.deepEqual(await workspaceOf(child.id), { head_version_id: asOfT1!.id, base_version_id: asOfT1!.id, setup_state: 'done' });
      const [listed, readA, readB] = await toolResults(child, await turn(child, look));
      assert.match(listed![1], /^"a\.txt" \(6 bytes\)$/m);
      assert.doesNotMatch(listed![1], /b\.txt/);
      assert.doesNotMatch(listed![1], /workspace set up/, 'the setup is not run again');
      assert.deepEqual([readA![1], readA![2]], ['alpha\n', true]);
      assert.equal(readB![2], false, `b.txt is not there: ${readB![1]}`);
    }
    assert.equal(await blobCount(), blobs, 'the forks stored no blob');
    assert.deepEqual((await query<{ n: number }>('SELECT count(*)::int AS n FROM workspace_versions'))[0], versions, 'nor made a version (reading commits nothing)');

    // The fork writes; the source goes on writing; neither sees the other's.
    const forkWrote = await turn(afterT1, `${tool('write_file', { path: 'a.txt', content: 'the fork\n' })} ${tool('write_file', { path: 'c.txt', content: 'from the fork\n' })}`);
    const [sourceList, sourceA, sourceWrite] = await toolResults(source, await turn(source, `${tool('list_files', {})} ${tool('read_file', { path: 'a.txt' })} ${tool('write_file', { path: 'd.txt', content: 'later\n' })}`));
    assert.doesNotMatch(sourceList![1], /c\.txt/);
    assert.match(sourceList![1], /^"b\.txt" \(5 bytes\)$/m);
    assert.equal(sourceA![1], 'alpha\n');
    assert.equal(sourceWrite![2], true);
    const [forkList, forkA] = await toolResults(afterT1, await turn(afterT1, `${tool('list_files', {})} ${tool('read_file', { path: 'a.txt' })}`));
    assert.match(forkList![1], /^"c\.txt" \(14 bytes\)$/m);
    assert.doesNotMatch(forkList![1], /b\.txt|d\.txt/);
    assert.equal(forkA![1], 'the fork\n');
    // The other fork branched from the same version: it sees neither the first fork's writes nor the source's later ones.
    const otherTurn = await turn(beforeT2, tool('list_files', {}));
    const [otherList] = await toolResults(beforeT2, otherTurn);
    assert.doesNotMatch(otherList![1], /b\.txt|c\.txt|d\.txt/);

    // The fork's first version goes on from the base's seq, with the source's version as parent.
    const [first] = await query<{ seq: number; parent_id: string; base_seq: number }>(
      `SELECT v.seq, v.parent_id, b.seq AS base_seq FROM workspace_versions v JOIN workspace_versions b ON b.id = v.parent_id WHERE v.workdir_id = $1 ORDER BY v.seq LIMIT 1`,
      [afterT1.id],
    );
    assert.deepEqual(first, { seq: first!.base_seq + 1, parent_id: asOfT1!.id, base_seq: first!.base_seq });
    // Artifacts: the fork's are its own writes; the source's stay the source's.
    assert.deepEqual(await artifactPaths(afterT1), ['/workspace/a.txt', '/workspace/c.txt']);
    assert.deepEqual(await artifactPaths(beforeT2), []);
    assert.deepEqual(await artifactPaths(source), ['/workspace/a.txt', '/workspace/b.txt', '/workspace/d.txt']);

    // Forks of forks: at a fork's own turn, the workspace as of its write; at a turn of a fork that
    // never wrote, its starting version; at an inherited turn, the ancestor's version as of it.
    const [forkVersion] = await query<{ id: string }>('SELECT id FROM workspace_versions WHERE turn_id = $1 ORDER BY seq DESC LIMIT 1', [forkWrote.data.turn_id]);
    const ofOwnWrite = await fork(afterT1, { after_turn_id: forkWrote.data.turn_id });
    assert.equal((await workspaceOf(ofOwnWrite.id))?.base_version_id, forkVersion!.id);
    const [grandRead] = await toolResults(ofOwnWrite, await turn(ofOwnWrite, tool('read_file', { path: 'a.txt' })));
    assert.equal(grandRead![1], 'the fork\n');
    const ofReader = await fork(beforeT2, { after_turn_id: otherTurn.data.turn_id });
    assert.equal((await workspaceOf(ofReader.id))?.base_version_id, asOfT1!.id);
    const ofInherited = await fork(afterT1, { after_turn_id: t1.data.turn_id });
    assert.equal((await workspaceOf(ofInherited.id))?.base_version_id, asOfT1!.id);
  });

  it('a fork from before the turn that made the workspace makes its own: the setup runs in the fork', async () => {
    const source = await hosted({ setup_commands: ['echo set up >> setup.log'] });
    await turn(source, 'no tools yet');
    const t2 = await turn(source, tool('shell', { command: 'cat setup.log' }));
    const [setupRan] = await toolResults(source, t2);
    assert.match(setupRan![1], /\[workspace set up\]/);
    const child = await fork(source, { before_turn_id: t2.data.turn_id });
    assert.equal(await workspaceOf(child.id), undefined, 'no workspace at that point: nothing branched');
    const [ran] = await toolResults(child, await turn(child, tool('shell', { command: 'cat setup.log; ls' })));
    assert.match(ran![1], /\[workspace set up\]\n\$ echo set up >> setup\.log/);
    assert.match(ran![1], /set up\nsetup\.log\n$/, 'set up once, in the fork\'s own workspace');
    assert.deepEqual(await workspaceOf(child.id).then((w) => [w?.setup_state, w?.base_version_id]), ['done', null]);
  });

  it('a project session with an environment: its fork branches the project\'s workspace and keeps the project; without an environment it keeps the project\'s workdir', async () => {
    const project = await http(`${API}/projects`, { body: { name: 'fork workspace project' } });
    assert.equal(project.status, 201, project.text);
    const source = await hosted({}, { project_id: project.body.id });
    const t1 = await turn(source, tool('write_file', { path: 'p.txt', content: 'project file\n' }));
    const child = await fork(source, { after_turn_id: t1.data.turn_id });
    assert.equal(child.body.yuxi.project_id, project.body.id);
    const [row] = await query<{ workdir_id: string }>('SELECT workdir_id FROM sessions WHERE id = $1', [child.id]);
    assert.equal(row!.workdir_id, child.id);
    const [listed, wrote] = await toolResults(child, await turn(child, `${tool('list_files', {})} ${tool('write_file', { path: 'q.txt', content: 'fork only\n' })}`));
    assert.match(listed![1], /^"p\.txt" \(13 bytes\)$/m);
    assert.equal(wrote![2], true);
    const [projectList] = await toolResults(source, await turn(source, tool('list_files', {})));
    assert.match(projectList![1], /p\.txt/);
    assert.doesNotMatch(projectList![1], /q\.txt/, 'the project\'s workspace does not see the fork\'s writes');

    const plainRes = await http(`${API}/sessions`, { idempotencyKey: newKey('plain'), body: { agent_id: 'default-chatbot', project_id: project.body.id } });
    assert.equal(plainRes.status, 201, plainRes.text);
    const plain = await live(plainRes.body);
    const said = await turn(plain, 'hello');
    const plainFork = await fork(plain, { after_turn_id: said.data.turn_id });
    const [plainRow] = await query<{ workdir_id: string }>('SELECT workdir_id FROM sessions WHERE id = $1', [plainFork.id]);
    assert.equal(plainRow!.workdir_id, project.body.id, 'no environment: the project\'s workdir, as every session of the project');
  });

  it('a project session that never wrote: its fork sees what the project\'s other sessions wrote before the turn ended, not what they wrote after', async () => {
    const project = await http(`${API}/projects`, { body: { name: 'fork shared workdir' } });
    assert.equal(project.status, 201, project.text);
    const source = await hosted({}, { project_id: project.body.id });
    const writer = await hosted({}, { project_id: project.body.id });
    await turn(writer, tool('write_file', { path: 'a.txt', content: 'before\n' }));
    const written = await workspaceOf(project.body.id);
    const point = await turn(source, 'the source only talks');
    await turn(writer, tool('write_file', { path: 'late.txt', content: 'after the point\n' }));
    const child = await fork(source, { after_turn_id: point.data.turn_id });
    assert.equal((await workspaceOf(child.id))?.base_version_id, written!.head_version_id, 'the project\'s version as the turn ended');
    const [listed, readA] = await toolResults(child, await turn(child, `${tool('list_files', {})} ${tool('read_file', { path: 'a.txt' })}`));
    assert.match(listed![1], /^"a\.txt" \(7 bytes\)$/m);
    assert.doesNotMatch(listed![1], /late\.txt/, 'written after the fork point\'s turn ended');
    assert.equal(readA![1], 'before\n');
  });
});
