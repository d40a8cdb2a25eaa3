import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { countTokens, loadTokenizer, parseScript, scriptedSummary } from '#libs/models';
import { LinearSchemaValidator, parseToolDeclarations, validateToolArguments, type ResolvedTool } from '#libs/tools';

// Bounded work per input: no input holds a worker's event loop for more than a moment.
// The bounds here are fixed and generous (the old code took minutes on the same inputs).

const MB = 1024 * 1024;

/** Milliseconds `run` took. */
function timed(run: () => unknown): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

describe('token counting is linear whatever the shape of the text', () => {
  before(() => loadTokenizer());

  it('counts a 1 MB single word, 1 MB of spaces and 1 MB of punctuation in under 2 s each', async () => {
    for (const text of ['a'.repeat(MB), ' '.repeat(MB), '!'.repeat(MB), '\n'.repeat(MB)]) {
      const start = performance.now();
      const tokens = await countTokens(text);
      const ms = performance.now() - start;
      assert.ok(ms < 2000, `${JSON.stringify(text.slice(0, 1))} × 1 MB counted in ${Math.round(ms)} ms`);
      assert.ok(tokens > 0 && tokens <= text.length, `${tokens} tokens`);
    }
  });

  it('counts ordinary text exactly as the tokenizer does', async () => {
    // o200k_base counts; no run of this text is long enough to be cut into pieces.
    assert.equal(await countTokens('Hello world'), 2);
    assert.equal(await countTokens(''), 0);
    const { countTokens: exact } = await import('gpt-tokenizer/encoding/o200k_base');
    const prose = 'The quick brown fox jumps over the lazy dog.\n\n'.repeat(2000);
    const url = `see https://example.com/${'segment/'.repeat(50)} now`;
    const code = `function f() {\n${'  return [1, 2, 3];\n'.repeat(100)}}`;
    for (const text of [prose, url, code]) assert.equal(await countTokens(text), exact(text));
  });

  it('counts a long run as about what its pieces cost, not a fixed guess', async () => {
    const word = 'abcdefgh'.repeat(1024);
    const { countTokens: exact } = await import('gpt-tokenizer/encoding/o200k_base');
    const reference = exact(word);
    const counted = await countTokens(word);
    assert.ok(Math.abs(counted - reference) <= reference * 0.05 + 64, `${counted} vs ${reference}`);
  });
});

describe("the scripted model's directive parser is linear", () => {
  const adversarial = [
    '[[tool:{'.repeat(MB / 8),
    '[[tool:x'.repeat(MB / 8),
    '[[tool:x{'.repeat(MB / 9) + '}'.repeat(MB / 9),
    '[[ask:'.repeat(MB / 6),
    '[[delay:'.repeat(MB / 8),
    '[[words:1]'.repeat(MB / 10),
    `[[tool:x {"a":"${'\\"'.repeat(MB / 4)}`,
  ];

  for (const text of adversarial) {
    it(`parses 1 MB of ${JSON.stringify(text.slice(0, 10))}… in under 2 s`, () => {
      const ms = timed(() => parseScript(text));
      assert.ok(ms < 2000, `${Math.round(ms)} ms`);
    });
  }

  it('summarises a 1 MB line of unclosed attachment markers in under 2 s', () => {
    const line = `[user] ${'[Attached files: x'.repeat(MB / 18)}`;
    const ms = timed(() => scriptedSummary(line));
    assert.ok(ms < 2000, `${Math.round(ms)} ms`);
    assert.equal(scriptedSummary('[user] hi [Attached files: a.txt, b.png]'), 'Facts:\n- user: hi [Attached files: a.txt, b.png]\n- files: a.txt, b.png');
  });

  it('still reads every directive, JSON with brackets included', () => {
    const script = parseScript('look [[tool:search {"q": "a]]b"}]] then [[ask:Why?]] [[delay:5]] [[words:3]] [[tool:x {]] [[fail]]');
    assert.deepEqual(
      script.steps.map((s) => [s.name, s.arguments]),
      [
        ['search', '{"q":"a]]b"}'],
        ['ask_user', '{"question":"Why?"}'],
      ],
    );
    assert.equal(script.delayMs, 5);
    assert.equal(script.words, 3);
    assert.equal(script.fail, 'model_error');
  });
});

describe('tool argument patterns run on a linear engine', () => {
  const tool = (pattern: string): ResolvedTool => ({
    name: 'lookup',
    description: '',
    parameters: { type: 'object', properties: { q: { type: 'string', pattern } }, required: ['q'] },
    executor: 'client',
    requiresApproval: false,
    idempotent: false,
    sideEffects: true,
    source: 'client',
  });

  it('tests ^(a+)+$ against 50,000 a’s and a b in well under a second', () => {
    const evil = tool('^(a+)+$');
    let result: ReturnType<typeof validateToolArguments> | undefined;
    const ms = timed(() => (result = validateToolArguments(evil, JSON.stringify({ q: `${'a'.repeat(50_000)}b` }))));
    assert.ok(ms < 1000, `${Math.round(ms)} ms`);
    assert.equal(result?.ok, false);
    assert.deepEqual(validateToolArguments(evil, '{"q":"aaa"}'), { ok: true, value: { q: 'aaa' } });
  });

  it('refuses at save a pattern the linear engine cannot run, naming the field', () => {
    for (const pattern of ['^(a)\\1$', '^(?=a)a$', '^\\p{L}+$']) {
      const { errors } = parseToolDeclarations([{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string', pattern } } } }]);
      assert.equal(errors.length, 1, pattern);
      assert.match(errors[0] ?? '', /^tools\[0\]\.parameters: .*pattern/);
    }
    const ok = parseToolDeclarations([{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^[a-z]+@[a-z.]+$' } } } }]);
    assert.deepEqual(ok.errors, []);
  });

  it("checks an MCP server's output schema on the linear engine too, and takes the output as it is where a pattern cannot run there", () => {
    const validator = new LinearSchemaValidator();
    const evil = validator.getValidator({ type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } } });
    let result: ReturnType<typeof evil> | undefined;
    const ms = timed(() => (result = evil({ q: `${'a'.repeat(50_000)}b` })));
    assert.ok(ms < 1000, `${Math.round(ms)} ms`);
    assert.equal(result?.valid, false);
    assert.equal(evil({ q: 'aaa' }).valid, true);
    const lookahead = validator.getValidator({ type: 'object', properties: { q: { type: 'string', pattern: '^(?=a)a$' } } });
    assert.equal(lookahead({ q: 'anything' }).valid, true);
  });
});
