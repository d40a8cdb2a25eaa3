import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { pdfWithText, PNG, uploadDraft } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { until } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

// What the agent sees of attached files: the list in the model context (this and earlier consumed
// inputs only) and the builtin file tools, with the scripted model and an OpenAI-compatible fake.

async function createWithFiles(agentId: string, input: unknown, fileIds: string[]): Promise<any> {
  const res = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: agentId, input, yuxi: { attachment_file_ids: fileIds } } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

const followUp = (text: string, fileIds: string[]) => ({ type: 'agent.session.input.message', input: text, yuxi: { mode: 'follow_up', attachment_file_ids: fileIds } });

async function turnItems(sessionId: string, turnId: string): Promise<any[]> {
  return (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
}

describe('files: what the agent sees', () => {
  let fake: FakeOpenAi;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await fake.close();
  });

  async function open(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  }

  it('a scripted read_file call reads the attached text file; the files bind to the input\'s last message', async () => {
    const draft = await uploadDraft('The launch code is 4242.\nKeep it secret.', 'secret.txt');
    const session = await createWithFiles(
      'file-reader',
      [
        { role: 'user', content: 'Here is a file.' },
        { role: 'user', content: `[[tool:read_file {"file_id":"${draft.id}"}]]` },
      ],
      [draft.id],
    );
    const stream = await open(session.id);
    const done = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
    const items = await turnItems(session.id, done.data.turn_id);
    const call = items.find((i) => i.type === 'function_call');
    assert.equal(call.name, 'read_file');
    assert.deepEqual(JSON.parse(call.arguments), { file_id: draft.id });
    const output = items.find((i) => i.type === 'function_call_output');
    assert.equal(output.output, 'The launch code is 4242.\nKeep it secret.');
    assert.equal(output.yuxi.success, true);
    const answer = items.filter((i) => i.role === 'assistant').at(-1);
    assert.equal(answer.content[0].text, 'Tool read_file returned: The launch code is 4242. Keep it secret.');

    const input = await http(`${API}/sessions/${session.id}/inputs/${session.yuxi.receipt.input_id}`);
    const userMessages = input.body.items.filter((i: any) => i.role === 'user');
    assert.equal(userMessages.length, 2);
    assert.equal(input.body.attachments[0].message_id, userMessages[1].id, 'bound to the last user message of the input');
  });

  it('reads a PDF page by page, lists the workdir, and refuses to read an image as text', async () => {
    const pdf = await uploadDraft(pdfWithText('Revenue grew twelve percent'), 'q3.pdf');
    const image = await uploadDraft(PNG, 'chart.png');
    const session = await createWithFiles('file-reader', `[[tool:read_file {"file_id":"${pdf.id}"}]]`, [pdf.id, image.id]);
    const stream = await open(session.id);
    const first = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
    const pdfOutput = (await turnItems(session.id, first.data.turn_id)).find((i) => i.type === 'function_call_output');
    assert.equal(pdfOutput.output, '[page 1]\nRevenue grew twelve percent');

    await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: '[[tool:list_files]]' });
    const second = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.data.turn_id, 20_000);
    const listed = JSON.parse((await turnItems(session.id, second.data.turn_id)).find((i) => i.type === 'function_call_output').output);
    assert.deepEqual(
      listed.files.map((f: any) => [f.file_id, f.filename, f.mime_type]).sort(),
      [
        [image.id, 'chart.png', 'image/png'],
        [pdf.id, 'q3.pdf', 'application/pdf'],
      ].sort(),
    );

    await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: `[[tool:read_file {"file_id":"${image.id}"}]]` });
    const third = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && ![first.data.turn_id, second.data.turn_id].includes(e.data.turn_id), 20_000);
    const imageOutput = (await turnItems(session.id, third.data.turn_id)).find((i) => i.type === 'function_call_output');
    assert.equal(imageOutput.yuxi.success, false);
    assert.match(imageOutput.output, /chart\.png is image\/png, which has no text/);

    const other = await createWithFiles('file-reader', `[[tool:read_file {"file_id":"${pdf.id}"}]]`, [(await uploadDraft('x', 'x.txt')).id]);
    const otherStream = await open(other.id);
    const foreign = await otherStream.waitForType('agent.session.turn.completed', undefined, 20_000);
    const foreignOutput = (await turnItems(other.id, foreign.data.turn_id)).find((i) => i.type === 'function_call_output');
    assert.equal(foreignOutput.yuxi.success, false, 'another session\'s file is not in this workdir');
  });

  it('the model context lists the attachments of this and earlier consumed inputs, never of queued or cancelled ones', async () => {
    const { id: agentId, model } = await putAgent({
      tools: [{ type: 'function', name: 'confirm', description: 'Ask the client to confirm', parameters: { type: 'object', properties: {} } }],
    });
    const m = fakeModel(model);
    fake.script(m, [{ tool_calls: [{ id: 'c1', name: 'confirm', arguments: '{}' }] }, { text: 'turn one done' }, { text: 'turn two done' }]);
    const a = await uploadDraft('first file', 'a.txt');
    const session = await createWithFiles(agentId, 'first input', [a.id]);
    const stream = await open(session.id);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting', undefined, 20_000);
    const turnOne = waiting.data.turn_id;

    // While turn one waits, a follow-up with file B queues and a third input with file C is cancelled.
    const b = await uploadDraft('second file', 'b.txt');
    const c = await uploadDraft('third file', 'c.txt');
    const second = await postEvent(session.id, followUp('second input', [b.id]));
    const third = await postEvent(session.id, followUp('third input', [c.id]));
    assert.equal((await postEvent(session.id, { type: 'yuxi.session.input.cancel_input', input_id: third.body.input_id })).status, 202);
    for (const inputId of [second.body.input_id, third.body.input_id]) {
      const ready = await until(async () => ((await http(`${API}/sessions/${session.id}/inputs/${inputId}`)).body.attachment_status === 'ready' ? true : undefined), {
        attempts: 100,
        intervalMs: 100,
      });
      assert.equal(ready, true, 'queued and cancelled files are prepared too');
    }
    const resumed = await postEvent(session.id, { type: 'tool_result', turn_id: turnOne, call_id: 'c1', success: true, output: 'ok' });
    assert.equal(resumed.status, 202);
    await stream.waitForType('agent.session.turn.completed', turnOne, 20_000);
    await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnOne, 20_000);

    const listing = (file: any, name: string) => `${name} (file_id ${file.id}, text/plain, ${file.bytes} bytes)`;
    const userTexts = (request: any) => request.messages.filter((msg: any) => msg.role === 'user').map((msg: any) => msg.content as string);
    const [call1, call2, call3] = fake.requests(m) as any[];
    for (const [request, name] of [
      [call1, 'turn one, first call'],
      [call2, 'turn one, after the queued input and the cancelled one were prepared'],
    ] as const) {
      assert.deepEqual(userTexts(request), [`first input\n\n[Attached files: ${listing(a, 'a.txt')}]`], name);
    }
    assert.deepEqual(userTexts(call3), [`first input\n\n[Attached files: ${listing(a, 'a.txt')}]`, `second input\n\n[Attached files: ${listing(b, 'b.txt')}]`], 'turn two: this input and the earlier one');
    assert.ok(!JSON.stringify([call1, call2, call3]).includes(c.id), 'the cancelled input\'s file never reaches the model');
  });
});
