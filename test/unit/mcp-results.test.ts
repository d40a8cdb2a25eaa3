import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkToolMedia, type ResolveSessionImages } from '#libs/files';
import { ImageReferences, MISSING_IMAGE_TEXT, toModelMessages } from '#libs/runtime';
import { MAX_EMBEDDED_RESOURCE_BYTES, MAX_MCP_OUTPUT_CHARS, outcomeOf } from '#libs/tools';
import { type ItemEntity, itemText, type StoredContentPart } from '#libs/engine';
import { PNG } from '../support/file-fixtures.js';

// What an MCP tool's result becomes (text for the model, images and audio aside), which of its
// media are stored, and how the stored images reach the model after the step's tool messages.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const FILE_A = '0123456789abcdef0123456789abcdef';
const FILE_B = 'fedcba9876543210fedcba9876543210';
const PNG_B64 = PNG.toString('base64');

describe('outcomeOf (MCP tool results)', () => {
  it('joins text parts; an image leaves a numbered line and its bytes in media', () => {
    const outcome = outcomeOf({
      content: [
        { type: 'text', text: "Here's the image you requested:" },
        { type: 'image', data: PNG_B64, mimeType: 'image/png' },
        { type: 'text', text: 'The image above is the MCP logo.' },
      ],
    });
    assert.equal(outcome.success, true);
    assert.equal(outcome.output, "Here's the image you requested:\n[image 1: image/png]\nThe image above is the MCP logo.");
    assert.equal(outcome.media?.length, 1);
    assert.equal(outcome.media![0]!.kind, 'image');
    assert.equal(outcome.media![0]!.mimeType, 'image/png');
    assert.ok(outcome.media![0]!.data.equals(PNG));
  });

  it('numbers images and audio together, in order; a text-only result has no media', () => {
    const outcome = outcomeOf({
      content: [
        { type: 'audio', data: Buffer.from('RIFF').toString('base64'), mimeType: 'audio/wav' },
        { type: 'image', data: PNG_B64, mimeType: 'image/png' },
      ],
    });
    assert.equal(outcome.output, '[audio 1: audio/wav]\n[image 2: image/png]');
    assert.deepEqual(
      outcome.media?.map((m) => m.kind),
      ['audio', 'image'],
    );
    assert.equal('media' in outcomeOf({ content: [{ type: 'text', text: 'hi' }] }), false);
  });

  it('an error result is a failed outcome with its text', () => {
    assert.deepEqual(outcomeOf({ content: [{ type: 'text', text: 'boom' }], isError: true }), { success: false, output: 'boom' });
  });

  it('includes a small embedded text resource with its URI; names a large or binary one', () => {
    const small = outcomeOf({ content: [{ type: 'resource', resource: { uri: 'demo://a.txt', mimeType: 'text/plain', text: 'hello resource' } }] });
    assert.equal(small.output, '[resource demo://a.txt]\nhello resource');
    const large = 'x'.repeat(MAX_EMBEDDED_RESOURCE_BYTES + 1);
    assert.equal(
      outcomeOf({ content: [{ type: 'resource', resource: { uri: 'demo://big.txt', mimeType: 'text/plain', text: large } }] }).output,
      `[resource demo://big.txt (text/plain) ${MAX_EMBEDDED_RESOURCE_BYTES + 1} bytes of text, not shown]`,
    );
    // Exactly the limit is still shown (bytes, not characters: a multi-byte text counts its bytes).
    assert.match(outcomeOf({ content: [{ type: 'resource', resource: { uri: 'demo://edge', text: 'y'.repeat(MAX_EMBEDDED_RESOURCE_BYTES) } }] }).output, /^\[resource demo:\/\/edge\]\ny+$/);
    assert.match(outcomeOf({ content: [{ type: 'resource', resource: { uri: 'demo://wide', text: 'é'.repeat(MAX_EMBEDDED_RESOURCE_BYTES / 2 + 1) } }] }).output, /not shown/);
    assert.equal(
      outcomeOf({ content: [{ type: 'resource', resource: { uri: 'demo://b.bin', mimeType: 'application/octet-stream', blob: Buffer.from('12345').toString('base64') } }] }).output,
      '[resource demo://b.bin (application/octet-stream) 5 bytes, binary, not shown]',
    );
  });

  it('lists resource links with their URI, type and name', () => {
    const outcome = outcomeOf({
      content: [
        { type: 'text', text: 'Here are 2 resource links:' },
        { type: 'resource_link', uri: 'demo://resource/dynamic/blob/1', name: 'Blob Resource 1', mimeType: 'application/octet-stream' },
        { type: 'resource_link', uri: 'demo://resource/dynamic/text/2', name: 'Text Resource 2', mimeType: 'text/plain' },
        { type: 'resource_link', uri: 'demo://untyped', name: 'Plain' },
      ],
    });
    assert.equal(
      outcome.output,
      [
        'Here are 2 resource links:',
        '[resource_link demo://resource/dynamic/blob/1 (application/octet-stream) Blob Resource 1]',
        '[resource_link demo://resource/dynamic/text/2 (text/plain) Text Resource 2]',
        '[resource_link demo://untyped Plain]',
      ].join('\n'),
    );
  });

  it('adds structuredContent as JSON unless a text part already holds the same', () => {
    const weather = { temperature: 33, conditions: 'Cloudy', humidity: 82 };
    assert.equal(outcomeOf({ content: [], structuredContent: weather }).output, JSON.stringify(weather));
    // server-everything's get-structured-content repeats it as text: not twice.
    assert.equal(outcomeOf({ content: [{ type: 'text', text: JSON.stringify(weather) }], structuredContent: weather }).output, JSON.stringify(weather));
    // The same value, formatted differently, is still the same.
    const pretty = JSON.stringify({ humidity: 82, conditions: 'Cloudy', temperature: 33 }, null, 2);
    assert.equal(outcomeOf({ content: [{ type: 'text', text: pretty }], structuredContent: weather }).output, pretty);
    // Text that says something else keeps the structured result after it.
    assert.equal(outcomeOf({ content: [{ type: 'text', text: 'It is cloudy.' }], structuredContent: weather }).output, `It is cloudy.\n${JSON.stringify(weather)}`);
    assert.equal(outcomeOf({ content: [{ type: 'text', text: '{"temperature": 34}' }], structuredContent: weather }).output, `{"temperature": 34}\n${JSON.stringify(weather)}`);
  });

  it('truncates an output over MAX_MCP_OUTPUT_CHARS and says by how much', () => {
    const outcome = outcomeOf({ content: [{ type: 'text', text: 'z'.repeat(MAX_MCP_OUTPUT_CHARS + 10) }] });
    assert.equal(outcome.output, `${'z'.repeat(MAX_MCP_OUTPUT_CHARS)}\n[truncated: 10 more characters]`);
  });
});

describe('checkToolMedia (which images of a tool result are stored)', () => {
  it('keeps images whose bytes are an accepted type, sniffed (the declared type is not trusted), named after the tool', async () => {
    const { images, notes } = await checkToolMedia('get-tiny-image', [{ kind: 'image', mimeType: 'image/jpeg', data: PNG }]);
    assert.deepEqual(notes, []);
    assert.equal(images.length, 1);
    assert.equal(images[0]!.mimeType, 'image/png');
    assert.equal(images[0]!.filename, 'get-tiny-image-1.png');
    assert.equal(images[0]!.number, 1);
    assert.match(images[0]!.sha256, /^[0-9a-f]{64}$/);
  });

  it('notes audio, empty and unrecognised bytes instead of storing them', async () => {
    const { images, notes } = await checkToolMedia('t', [
      { kind: 'audio', mimeType: 'audio/wav', data: Buffer.from('RIFF....WAVE') },
      { kind: 'image', mimeType: 'image/png', data: Buffer.alloc(0) },
      { kind: 'image', mimeType: 'image/svg+xml', data: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>') },
      { kind: 'image', mimeType: 'image/png', data: PNG },
    ]);
    assert.deepEqual(
      images.map((i) => i.number),
      [4],
    );
    assert.equal(notes.length, 3);
    assert.match(notes[0]!, /^\[audio 1 not shown: the model does not take audio\]$/);
    assert.match(notes[1]!, /^\[image 2 not shown: the tool sent no bytes\]$/);
    assert.match(notes[2]!, /^\[image 3 not shown: the bytes are .*not a PNG, JPEG, GIF or WebP image\]$/);
  });

  it('caps the count and the bytes of one result', async () => {
    const three = Array.from({ length: 3 }, () => ({ kind: 'image' as const, mimeType: 'image/png', data: PNG }));
    const byCount = await checkToolMedia('t', three, { count: 2, bytes: 1_000_000 });
    assert.deepEqual(
      byCount.images.map((i) => i.number),
      [1, 2],
    );
    assert.deepEqual(byCount.notes, ['[image 3 not shown: at most 2 images of one tool result are kept]']);
    const byBytes = await checkToolMedia('t', three, { count: 10, bytes: PNG.length * 2 });
    assert.equal(byBytes.images.length, 2);
    assert.deepEqual(byBytes.notes, [`[image 3 not shown: the images of one tool result are kept up to ${PNG.length * 2} bytes]`]);
  });
});

function item(type: string, content: StoredContentPart[], role: 'user' | 'assistant' | null = null): ItemEntity {
  return { id: `i_${Math.random()}`, sessionId: SESSION, turnId: 't', runId: 'r', inputId: null, seq: '1', type, role, status: 'completed', content, phase: null, tokens: null, createdAt: new Date(0) };
}

function fakeImages(known: Record<string, string>): { images: ResolveSessionImages; asked: string[][] } {
  const asked: string[][] = [];
  const images = {
    dataUrls: async (_sessionIds: string[], ids: string[]) => {
      asked.push(ids);
      return new Map(ids.filter((id) => known[id]).map((id) => [id, known[id]!]));
    },
  } as unknown as ResolveSessionImages;
  return { images, asked };
}

describe('tool images in the model context', () => {
  const DATA_A = `data:image/png;base64,${PNG_B64}`;
  const step = (): ItemEntity[] => [
    item('message', [{ type: 'input_text', text: 'show me' }], 'user'),
    item('function_call', [{ type: 'function_call', call_id: 'c1', name: 'get-tiny-image', arguments: '{}' }]),
    item('function_call', [{ type: 'function_call', call_id: 'c2', name: 'echo', arguments: '{}' }]),
    item('function_call_output', [{ type: 'function_call_output', call_id: 'c1', output: '[image 1: image/png]\n[image 2: image/png]', success: true, file_ids: [FILE_A, FILE_B] }]),
    item('function_call_output', [{ type: 'function_call_output', call_id: 'c2', output: 'hi', success: true }]),
    item('message', [{ type: 'output_text', text: 'a logo' }], 'assistant'),
  ];

  it('one user message after the step\'s tool messages carries the images, under a line naming the call; a gone file is said so', async () => {
    const { images, asked } = fakeImages({ [FILE_A]: DATA_A });
    const messages = toModelMessages(await new ImageReferences(images).resolve(step()));
    assert.deepEqual(asked, [[FILE_A, FILE_B]]);
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'user', 'assistant'],
    );
    const shown = messages[4]!;
    assert.equal(shown.role, 'user');
    assert.ok(shown.role === 'user' && shown.toolImages === true);
    assert.deepEqual(shown.role === 'user' ? shown.parts : null, [
      { type: 'text', text: '[Images returned by tool get-tiny-image (call c1)]' },
      { type: 'image', url: DATA_A },
      { type: 'text', text: MISSING_IMAGE_TEXT },
    ]);
    // The tool message itself stays text.
    assert.deepEqual(messages[2], { role: 'tool', call_id: 'c1', output: '[image 1: image/png]\n[image 2: image/png]' });
  });

  it('the images message closes the step even when the conversation ends with its outputs', async () => {
    const { images } = fakeImages({ [FILE_A]: DATA_A, [FILE_B]: DATA_A });
    const messages = toModelMessages(await new ImageReferences(images).resolve(step().slice(0, 5)));
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'user'],
    );
  });

  it('a context without tool images asks for no image at all, and gets no extra message', async () => {
    const { images, asked } = fakeImages({});
    const plain = step().map((i) => ({ ...i, content: i.content.map((part) => ({ ...part, file_ids: undefined })) }));
    const messages = toModelMessages(await new ImageReferences(images).resolve(plain));
    assert.deepEqual(asked, []);
    assert.equal(messages.filter((m) => m.role === 'user').length, 1);
  });

  it('an output part\'s images count in its size, as a message\'s do', () => {
    assert.equal(itemText([{ type: 'function_call_output', call_id: 'c', output: 'x', file_ids: [FILE_A, FILE_B] }]).images, 2);
  });
});
