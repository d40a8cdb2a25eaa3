import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ItemEntity, toItemDto } from '#libs/engine';
import { inheritedItemDto } from '#libs/protocol';

// An item a fork inherited, as the fork lists it: its inline images point at the fork's own path
// (which serves the ancestors' files too), everything else is the item as its source shows it.
const SOURCE = '01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e';
const FORK = '01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9f';
const FILE = '0123456789abcdef0123456789abcdef';
const url = (sessionId: string): string => `/api/v1/agents/sessions/${sessionId}/files/${FILE}/content`;

function item(content: ItemEntity['content'], extra: Partial<ItemEntity> = {}): ItemEntity {
  return { id: 'i1', sessionId: SOURCE, turnId: 't1', runId: null, inputId: 'in1', seq: '3', type: 'message', role: 'user', status: 'completed', content, phase: null, tokens: null, createdAt: new Date(0), ...extra } as ItemEntity;
}

describe('inherited items of a fork', () => {
  const receipts = new Map([['in1', new Date(5000)]]);

  it('shows an inherited inline image under the fork\'s path, keeping the file id and the other parts', () => {
    const source = item([{ type: 'input_text', text: 'look' }, { type: 'input_image', file_id: FILE, image_url: url(SOURCE) }] as ItemEntity['content']);
    const dto = inheritedItemDto(FORK, source, receipts);
    assert.deepEqual(dto.content, [{ type: 'input_text', text: 'look' }, { type: 'input_image', file_id: FILE, image_url: url(FORK) }]);
    assert.deepEqual({ ...dto, content: undefined }, { ...toItemDto(source, receipts), content: undefined }, 'ids, turn, input and received_at stay the truth');
  });

  it('leaves items without stored images as the source shows them (a data URL image has no file to serve)', () => {
    const text = item([{ type: 'input_text', text: 'hi' }] as ItemEntity['content']);
    assert.deepEqual(inheritedItemDto(FORK, text, receipts), toItemDto(text, receipts));
    const legacy = item([{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] as ItemEntity['content']);
    assert.deepEqual(inheritedItemDto(FORK, legacy, receipts), toItemDto(legacy, receipts));
    const call = item([{ call_id: 'c1', name: 'f', arguments: '{}' }] as ItemEntity['content'], { type: 'function_call', role: null });
    assert.deepEqual(inheritedItemDto(FORK, call, receipts), toItemDto(call, receipts));
  });
});
