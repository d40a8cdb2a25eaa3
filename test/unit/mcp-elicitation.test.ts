import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallInFlight, planNextStep, samplingMessage, type ToolPolicy } from '#libs/runtime';
import { elicitationQuestions, type ElicitationRequest, elicitationResult } from '#libs/tools';
import type { CommittedStep, ToolCallSpec } from '#libs/engine';

// An MCP server's question to the user (elicitation) as a waitpoint, and back: pure, no server.
const form: ElicitationRequest = {
  call_id: 'c1',
  server_label: 'crm',
  mode: 'form',
  message: 'Who are you?',
  requested_schema: {
    type: 'object',
    properties: {
      name: { type: 'string', title: 'Name', minLength: 2 },
      age: { type: 'integer', minimum: 0, maximum: 150 },
      subscribe: { type: 'boolean', default: false },
      plan: { type: 'string', enum: ['free', 'pro'] },
      tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 2 },
    },
    required: ['name'],
  },
};

describe('MCP elicitation as a question waitpoint', () => {
  it('asks the action first, then one question per field, with choices where the schema has them', () => {
    const questions = elicitationQuestions(form);
    assert.deepEqual(
      questions.map((q) => [q.question_id, q.options, q.multi_select, q.allow_other]),
      [
        ['action', ['accept', 'decline', 'cancel'], false, false],
        ['name', [], false, true],
        ['age', [], false, true],
        ['subscribe', ['true', 'false'], false, false],
        ['plan', ['free', 'pro'], false, false],
        ['tags', ['a', 'b', 'c'], true, false],
      ],
    );
    assert.match(questions[1]!.question, /Name.*required/);
    assert.match(questions[3]!.question, /optional.*default false/);
  });

  it('a url request asks the action alone and shows the url', () => {
    const questions = elicitationQuestions({ call_id: 'c1', server_label: 's', mode: 'url', message: 'Sign in', url: 'https://example.com/auth' });
    assert.equal(questions.length, 1);
    assert.match(questions[0]!.question, /https:\/\/example\.com\/auth/);
  });

  it('converts accepted answers to the schema types, applying defaults for fields left out', () => {
    const converted = elicitationResult(form, [
      { question_id: 'action', answer: 'accept' },
      { question_id: 'name', answer: 'Ada' },
      { question_id: 'age', answer: '36' },
      { question_id: 'tags', answer: ['a', 'c'] },
    ]);
    assert.deepEqual(converted, { result: { action: 'accept', content: { name: 'Ada', age: 36, subscribe: false, tags: ['a', 'c'] } } });
  });

  it('names every field whose answer does not fit', () => {
    const converted = elicitationResult(form, [
      { question_id: 'action', answer: 'accept' },
      { question_id: 'name', answer: 'A' },
      { question_id: 'age', answer: '3.5' },
      { question_id: 'plan', answer: 'gold' },
      { question_id: 'tags', answer: ['a', 'b', 'c'] },
    ]);
    assert.ok('errors' in converted);
    assert.deepEqual(
      converted.errors.map((e) => e.field),
      ['name', 'age', 'plan', 'tags'],
    );
    const missing = elicitationResult(form, [{ question_id: 'action', answer: 'accept' }]);
    assert.deepEqual('errors' in missing && missing.errors, [{ field: 'name', message: 'is required' }]);
    const foreign = elicitationResult(form, [{ question_id: 'action', answer: 'accept' }, { question_id: 'nick', answer: 'x' }]);
    assert.deepEqual('errors' in foreign && foreign.errors.map((e) => e.field), ['nick']);
  });

  it('decline and cancel carry no content; an unknown action is refused', () => {
    assert.deepEqual(elicitationResult(form, [{ question_id: 'action', answer: 'decline' }]), { result: { action: 'decline' } });
    assert.deepEqual(elicitationResult(form, [{ question_id: 'action', answer: 'cancel' }, { question_id: 'name', answer: 'x' }]), { result: { action: 'cancel' } });
    assert.ok('errors' in elicitationResult(form, [{ question_id: 'action', answer: 'maybe' }]));
  });
});

describe('planning a call that asked the user something', () => {
  const POLICY: ToolPolicy = {
    executorOf: () => 'server',
    needsApproval: () => false,
    idempotent: (name) => name === 'lookup',
    checkArguments: () => ({ ok: true, value: {} }),
  };
  const call: ToolCallSpec = { call_id: 'c1', name: 'book', arguments: '{}' };
  const model: CommittedStep = { runId: 'r1', kind: 'model_call', status: 'completed', ref: null, output: { text: '', tool_calls: [call] } };
  const started: CommittedStep = { runId: 'r1', kind: 'tool_call', status: 'started', ref: 'c1', output: {} };
  const answered = (action: 'accept' | 'decline', content?: Record<string, string>): CommittedStep => ({
    runId: 'r1',
    kind: 'waitpoint',
    status: 'completed',
    ref: `w-${action}`,
    output: { kind: 'question', response: { type: 'elicitation', call_id: 'c1', action, ...(content ? { content } : {}) } },
  });

  it('hands the newest answer to the started call', () => {
    assert.deepEqual(planNextStep([model, started, answered('decline'), answered('accept', { name: 'Ada' })], POLICY), {
      action: 'resume_elicitation',
      call,
      args: {},
      response: { type: 'elicitation', call_id: 'c1', action: 'accept', content: { name: 'Ada' } },
      idempotent: false,
      started: true,
    });
  });

  it('a call with a stored result is done, whatever it was asked', () => {
    const result: CommittedStep = { runId: 'r2', kind: 'tool_call', status: 'completed', ref: 'c1', output: { success: true, output: 'ok' } };
    assert.deepEqual(planNextStep([model, started, answered('accept'), result], POLICY), { action: 'call_model' });
  });
});

describe('a call in flight that stops for the user', () => {
  it('reports the question, takes the answer, then ends with the call', async () => {
    let asked: Promise<unknown> | undefined;
    const call = new CallInFlight('t:c1', async (self) => {
      asked = self.elicit({ message: 'name?', requestedSchema: { type: 'object', properties: {} } }, new AbortController().signal);
      const reply = (await asked) as { action: string };
      return { success: true, output: `server got ${reply.action}` };
    });
    const first = await call.next();
    assert.ok('elicit' in first && first.elicit.message === 'name?');
    assert.equal(call.answer({ action: 'accept', content: {} }), true);
    assert.deepEqual(await call.next(), { outcome: { success: true, output: 'server got accept' } });
    assert.equal(call.answer({ action: 'accept' }), false, 'nothing waits any more');
  });

  it('one question at a time: a second one while the first waits is declined', async () => {
    const signal = new AbortController().signal;
    let second: Promise<{ action: string }> | undefined;
    const call = new CallInFlight('t:c3', async (self) => {
      const first = self.elicit({ message: 'one', requestedSchema: { type: 'object', properties: {} } }, signal);
      second = self.elicit({ message: 'two', requestedSchema: { type: 'object', properties: {} } }, signal);
      return { success: true, output: `${(await first).action} ${(await second).action}` };
    });
    const asked = await call.next();
    assert.ok('elicit' in asked && asked.elicit.message === 'one');
    assert.deepEqual(await second, { action: 'decline' });
    call.answer({ action: 'accept' });
    assert.deepEqual(await call.next(), { outcome: { success: true, output: 'accept decline' } });
  });

  it('a request the server abandons answers cancel, and a later answer finds nothing waiting', async () => {
    const abandon = new AbortController();
    const call = new CallInFlight('t:c2', async (self) => {
      const reply = await self.elicit({ message: 'x', requestedSchema: { type: 'object', properties: {} } }, abandon.signal);
      return { success: false, output: reply.action };
    });
    assert.ok('elicit' in (await call.next()));
    abandon.abort();
    assert.deepEqual(await call.next(), { outcome: { success: false, output: 'cancel' } });
    assert.equal(call.answer({ action: 'accept' }), false);
  });
});

describe('MCP sampling messages', () => {
  it('keeps text and user images (as data URLs), names other content', () => {
    assert.deepEqual(samplingMessage({ role: 'user', content: { type: 'text', text: 'hi' } }), { role: 'user', text: 'hi' });
    assert.deepEqual(samplingMessage({ role: 'user', content: { type: 'image', data: 'AAAA', mimeType: 'image/png' } }), {
      role: 'user',
      text: '',
      parts: [{ type: 'image', url: 'data:image/png;base64,AAAA' }],
    });
    assert.deepEqual(samplingMessage({ role: 'assistant', content: { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' } }), { role: 'assistant', text: '[audio]' });
  });
});
