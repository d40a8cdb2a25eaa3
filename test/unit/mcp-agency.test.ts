// What an MCP server may ask of the worker during a call: a completion of the session's model
// (sampling) only where the agent declares it, cut at MCP_SAMPLING_MAX_TOKENS; a link for the user
// to open (URL elicitation) only over https.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { McpSampling } from '#libs/runtime';
import { elicitationUrlProblem } from '#libs/tools';

const config = (env: Record<string, string> = {}) => new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', MCP_ALLOW_PRIVATE_NETWORKS: 'true', ...env });

describe('MCP sampling cap', () => {
  it("cuts a completion at MCP_SAMPLING_MAX_TOKENS whatever the server's maxTokens", async () => {
    const streams = {
      open: () =>
        (async function* () {
          for (let i = 0; i < 100; i++) yield { type: 'text_delta', delta: 'word ' };
        })(),
    } as unknown as ConstructorParameters<typeof McpSampling>[0];
    const sampling = new McpSampling(streams, config({ MCP_SAMPLING_MAX_TOKENS: '3' }));
    const { result } = await sampling.answer({ model: 'scripted:x', approvalMode: 'auto', serverLabel: 's' }, { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 100_000 }, new AbortController().signal);
    assert.equal(result.stopReason, 'maxTokens');
    assert.ok((result.content as { text: string }).text.length <= 12, 'three tokens of four characters at most');
  });
});

describe('MCP URL elicitation', () => {
  it('shows the user https links only', () => {
    for (const url of ['http://example.com/login', 'javascript:alert(1)', 'data:text/html,hi', 'file:///etc/passwd', 'not a url']) {
      assert.match(elicitationUrlProblem({ mode: 'url', message: 'Open', url, elicitationId: 'e1' }) ?? '', /https/, url);
    }
    assert.equal(elicitationUrlProblem({ mode: 'url', message: 'Open', url: 'https://example.com/login', elicitationId: 'e1' }), null);
    assert.equal(elicitationUrlProblem({ mode: 'form', message: 'Name?', requestedSchema: { type: 'object', properties: {} } }), null);
  });
});
