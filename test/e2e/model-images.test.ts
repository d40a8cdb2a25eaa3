import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { randomPng } from '../support/file-fixtures.js';
import { API, http } from '../support/http.js';

// Images on their way to a real `openai:` model (the fake server records what it received): a
// large one arrives downscaled to the size the provider looks at, and the images of one request
// stay within MODEL_REQUEST_IMAGE_BYTES (1 MiB on the test stack, scripts/test.mjs), the older ones
// replaced by a note.

const REQUEST_IMAGE_BYTES = 1024 * 1024;
const dataUrl = (bytes: Buffer): string => `data:image/png;base64,${bytes.toString('base64')}`;
const imageMessage = (text: string, ...images: Buffer[]) => [{ role: 'user', content: [{ type: 'input_text', text }, ...images.map((bytes) => ({ type: 'input_image', image_url: dataUrl(bytes) }))] }];

describe('images sent to a model: downscaled and capped per request', () => {
  const openAi = useFakeOpenAi();

  async function completed(input: unknown, reply: string): Promise<{ request: any; sessionId: string }> {
    const { id, model } = await putAgent({ instructions: 'Describe images.' });
    openAi.fake.script(fakeModel(model), [{ text: reply }]);
    const session = await createSessionWith(id, input);
    const stream = await openAi.open(session.id);
    const done = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' || e.type === 'agent.session.turn.failed', 30_000);
    assert.equal(done.type, 'agent.session.turn.completed', JSON.stringify(done.data));
    const [request] = openAi.fake.requests(fakeModel(model)) as any[];
    return { request, sessionId: session.id };
  }

  it('a 3000 × 2400 image reaches the model as 960 × 768 (what the provider looks at), while the session keeps the original', async () => {
    const original = await sharp({ create: { width: 3000, height: 2400, channels: 3, background: '#336699' } })
      .composite([{ input: { create: { width: 600, height: 600, channels: 3, background: '#ffcc00' } }, left: 100, top: 100 }])
      .png()
      .toBuffer();
    const { request, sessionId } = await completed(imageMessage('what is this?', original), 'A blue picture.');
    const part = request.messages.find((m: any) => m.role === 'user').content.find((p: any) => p.type === 'image_url');
    assert.match(part.image_url.url, /^data:image\/png;base64,/);
    const sent = Buffer.from(part.image_url.url.split(',')[1], 'base64');
    const meta = await sharp(sent).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 960, 768], 'downscaled before it was sent');

    const items = await http(`${API}/sessions/${sessionId}/items?order=asc`);
    const image = items.body.data.find((i: any) => i.role === 'user').content[1];
    const stored = await fetch(`${env.apiUrl}${image.image_url}`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(stored.status, 200);
    const storedMeta = await sharp(Buffer.from(await stored.arrayBuffer())).metadata();
    assert.deepEqual([storedMeta.width, storedMeta.height], [3000, 2400], 'the session file is the original');
  });

  it('images past the per-request cap are not sent: the newest fit, the older ones become a note', async () => {
    // Noise does not compress: each is ~400 KB (1024 px wide, short: never downscaled); three are more than 1 MiB.
    const [oldest, middle, newest] = [randomPng(400 * 1024), randomPng(400 * 1024), randomPng(400 * 1024)];
    const { request } = await completed(imageMessage('compare:', oldest!, middle!, newest!), 'Three noisy strips.');
    const parts = request.messages.find((m: any) => m.role === 'user').content;
    const images = parts.filter((p: any) => p.type === 'image_url').map((p: any) => p.image_url.url);
    assert.deepEqual(images, [dataUrl(middle!), dataUrl(newest!)], 'the two newest images, unchanged');
    const sentBytes = images.reduce((sum: number, url: string) => sum + Buffer.from(url.split(',')[1]!, 'base64').length, 0);
    assert.ok(sentBytes <= REQUEST_IMAGE_BYTES, `${sentBytes} bytes of images sent`);
    assert.equal(parts[1].type, 'text', 'the oldest image stands as a text note, where it was');
    assert.match(parts[1].text, /image not sent: the images of this request reached their limit of 1048576 bytes/);
  });
});
