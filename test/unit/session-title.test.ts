import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_SESSION_TITLE, titleFromInput } from '#libs/protocol';

const text = (value: string) => [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: value }] }];

describe('the title of a session created without one', () => {
  it('is the first text on one line, whitespace and control characters folded', () => {
    assert.equal(titleFromInput(text('  Hello\tthere\r\n\u0007world  ')), 'Hello there world');
  });

  it('drops bidi controls and zero-width characters, so it renders as it reads; joiners of emoji stay', () => {
    const rlo = titleFromInput(text('invoice\u202Efdp.exe\u202C for \u2066you\u2069 \u200Enow\u200F'));
    assert.equal(rlo, 'invoicefdp.exe for you now');
    assert.equal(titleFromInput(text('\uFEFFzero\u200Bwidth\u061C')), 'zerowidth');
    assert.equal(titleFromInput(text('family 👨\u200D👩\u200D👧')), 'family 👨\u200D👩\u200D👧');
    assert.equal(titleFromInput(text('\u202E\u200B\u2067')), DEFAULT_SESSION_TITLE, 'nothing visible: the default');
    const blocks = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: '\u200B\uFEFF' }, { type: 'input_text' as const, text: 'the real question' }] }];
    assert.equal(titleFromInput(blocks), 'the real question', 'a first block of only invisible characters is passed over');
    assert.doesNotMatch(titleFromInput(text(`${'\u202E'.repeat(30)}${'word '.repeat(30)}`)), /[\u202A-\u202E]/);
  });

  it('is cut at a word near 60 characters, or inside a word with no space near, never inside a surrogate pair', () => {
    const cut = titleFromInput(text(`${'word '.repeat(30)}`));
    assert.ok(cut.endsWith('word…') && Array.from(cut).length <= 60, cut);
    const cjk = titleFromInput(text('会'.repeat(100)));
    assert.equal(cjk, `${'会'.repeat(59)}…`);
    const emoji = titleFromInput(text('😀'.repeat(100)));
    assert.equal(emoji, `${'😀'.repeat(59)}…`);
  });

  it('falls back to the default without text', () => {
    assert.equal(titleFromInput(null), DEFAULT_SESSION_TITLE);
    assert.equal(titleFromInput(text('   ')), DEFAULT_SESSION_TITLE);
    assert.equal(titleFromInput([{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }]), DEFAULT_SESSION_TITLE);
  });
});
