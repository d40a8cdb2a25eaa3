import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API, createSession, http, newKey } from '../support/http.js';
import { PNG } from '../support/file-fixtures.js';

// A session created without a title gets one a person can read in any list: the start of its first
// message, or a neutral default; a title given on create is kept as given.

async function titleOf(sessionId: string): Promise<string> {
  const res = await http(`${API}/sessions/${sessionId}`);
  assert.equal(res.status, 200, res.text);
  return res.body.yuxi.title as string;
}

describe('session titles', () => {
  it('takes the start of the first message as the title of a session created without one', async () => {
    const session = await createSession('  Where is my order A-1042?\n\nIt was due on Monday.  ');
    assert.equal(session.yuxi.title, 'Where is my order A-1042? It was due on Monday.');
    assert.equal(await titleOf(session.id), session.yuxi.title, 'stored as answered');
  });

  it('cuts a long first message at a word boundary with an ellipsis', async () => {
    const words = 'Please summarise the quarterly report for the board and list every risk it names in order of impact';
    const session = await createSession(words);
    const title = session.yuxi.title as string;
    assert.ok(title.endsWith('…'), title);
    assert.ok(Array.from(title).length <= 60, title);
    assert.ok(words.startsWith(title.slice(0, -1)), `a prefix of the message: ${title}`);
    assert.ok(words[title.length - 1] === ' ', `cut before a whole word: ${title}`);
  });

  it('gives a neutral default when there is no text to take one from', async () => {
    const empty = await createSession();
    assert.equal(empty.yuxi.title, 'New session');
    const imageOnly = await createSession([{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${PNG.toString('base64')}` }] }]);
    assert.equal(imageOnly.yuxi.title, 'New session');
  });

  it('keeps a title given on create as it was given', async () => {
    const res = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', title: 'Quarterly report', input: 'Hello!' }, idempotencyKey: newKey('create') });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.yuxi.title, 'Quarterly report');
    assert.equal(await titleOf(res.body.id), 'Quarterly report');
  });
});
