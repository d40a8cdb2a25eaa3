import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundItemContent } from '#libs/events';
import type { OutgoingEvent } from '#libs/events';

// An event embeds an item's content up to a bound: past it the content is cut (whole characters,
// all texts together) and the event says so in `yuxi.truncated`.

const itemEvent = (item: Record<string, unknown>): OutgoingEvent =>
  ({ type: 'agent.session.turn.item.done', turn_id: 't', output_index: 0, item: { id: 'i', type: 'message', yuxi: { turn_id: 't' }, ...item }, yuxi: { run_id: 'r' } }) as unknown as OutgoingEvent;

describe('item content in events is bounded', () => {
  it('returns an event within the bound as it is (the same object)', () => {
    const event = itemEvent({ content: [{ type: 'input_text', text: 'hello' }] });
    assert.equal(boundItemContent(event, 1024), event);
    const delta = { type: 'agent.session.turn.output_text.delta', delta: 'x'.repeat(10_000) } as unknown as OutgoingEvent;
    assert.equal(boundItemContent(delta, 1024), delta, 'deltas are never cut');
  });

  it('cuts a message past the bound and flags it; the original event is untouched', () => {
    const text = 'a'.repeat(5000);
    const event = itemEvent({ content: [{ type: 'input_text', text }] });
    const bounded = boundItemContent(event, 1024) as any;
    assert.equal(bounded.item.content[0].text, 'a'.repeat(1024));
    assert.deepEqual(bounded.yuxi, { run_id: 'r', truncated: true });
    assert.equal((event as any).item.content[0].text, text);
    assert.equal((event as any).yuxi.truncated, undefined);
  });

  it('bounds a command_execution item: its arguments, its command and its output share the budget', () => {
    const command = 'c'.repeat(600);
    const event = itemEvent({ type: 'command_execution', arguments: JSON.stringify({ command }), command, output: 'o'.repeat(5000), exit_code: 0 });
    const bounded = boundItemContent(event, 1024) as any;
    assert.equal(bounded.item.command, 'c'.repeat(1024 - bounded.item.arguments.length));
    assert.equal(bounded.item.output, '');
    assert.equal(bounded.item.exit_code, 0);
    assert.equal(bounded.yuxi.truncated, true);
  });

  it('spends one budget over all texts in order, and never splits a character', () => {
    const bounded = boundItemContent(itemEvent({ type: 'function_call_output', arguments: 'x'.repeat(600), output: 'é'.repeat(400) }), 1001) as any;
    assert.equal(bounded.item.arguments, 'x'.repeat(600));
    assert.equal(bounded.item.output, 'é'.repeat(200), '401 bytes left: 200 two-byte characters');
    assert.equal(Buffer.byteLength(bounded.item.arguments + bounded.item.output), 1000);
    const emoji = boundItemContent(itemEvent({ content: [{ type: 'output_text', text: '😀'.repeat(1000) }] }), 1026) as any;
    assert.equal(emoji.item.content[0].text, '😀'.repeat(256));
  });

  it('bounds the reasoning of an item, a content part and output_text.done alike', () => {
    const reasoning = boundItemContent(itemEvent({ content: [{ type: 'output_text', text: 'ok' }], yuxi: { turn_id: 't', reasoning: [{ type: 'reasoning_text', text: 'r'.repeat(3000) }] } }), 1024) as any;
    assert.equal(reasoning.item.yuxi.reasoning[0].text.length, 1022);
    assert.equal(reasoning.yuxi.truncated, true);
    const part = boundItemContent({ type: 'agent.session.turn.content_part.done', part: { type: 'output_text', text: 'p'.repeat(2000), annotations: [] }, yuxi: { run_id: 'r' } } as unknown as OutgoingEvent, 1024) as any;
    assert.deepEqual([part.part.text.length, part.part.annotations, part.yuxi.truncated], [1024, [], true]);
    const done = boundItemContent({ type: 'agent.session.turn.output_text.done', text: 'd'.repeat(2000), yuxi: { run_id: 'r' } } as unknown as OutgoingEvent, 1024) as any;
    assert.deepEqual([done.text.length, done.yuxi.truncated], [1024, true]);
    const reasoningDone = boundItemContent({ type: 'yuxi.session.turn.reasoning.done', text: 'r'.repeat(2000), yuxi: { run_id: 'r' } } as unknown as OutgoingEvent, 1024) as any;
    assert.deepEqual([reasoningDone.text.length, reasoningDone.yuxi.truncated], [1024, true]);
  });
});
