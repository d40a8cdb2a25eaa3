// What an MCP server may ask of the worker during a call: a completion of the session's model
// (sampling) only where the agent declares it, cut at MCP_SAMPLING_MAX_TOKENS; a link for the user
// to open (URL elicitation) only over https; and what reaches users of a server's errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { McpSampling } from '#libs/runtime';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { elicitationUrlProblem, remoteProgressMessage, sanitiseRemoteText, unavailableReason } from '#libs/tools';

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

describe('MCP remote error texts', () => {
  it('reach users cut, without control characters or addresses the user did not configure', () => {
    const text = `boom\u0000\u001b[31m at 10.1.2.3:8080 and [fd00::1] via mcp.example.com ${'x'.repeat(2000)}`;
    const clean = sanitiseRemoteText(text, 'mcp.example.com');
    assert.ok(clean.length <= 500);
    assert.ok(![...clean].some((char) => char.charCodeAt(0) < 0x20), 'no control characters');
    assert.ok(!clean.includes('10.1.2.3') && !clean.includes('fd00::1'), clean);
    assert.match(clean, /mcp\.example\.com/);
    assert.equal(sanitiseRemoteText('refused by 127.0.0.1', '127.0.0.1'), 'refused by 127.0.0.1');
  });

  it('are cleaned in time linear in what the server sends: a 1 MB error or progress message of hex and colons', () => {
    // A backtracking address pattern took ~1 s on 40,000 characters and grew with the square.
    for (const unit of ['a', 'a:', ':', 'f:f', '1.']) {
      const text = unit.repeat(Math.ceil(1_000_000 / unit.length));
      const started = performance.now();
      const clean = sanitiseRemoteText(text, 'mcp.example.com');
      const progress = remoteProgressMessage(text, 'https://mcp.example.com/mcp') ?? '';
      const ms = performance.now() - started;
      assert.ok(ms < 1_000, `${JSON.stringify(unit)} × ${text.length}: ${ms.toFixed(0)} ms`);
      assert.ok(clean.length <= 500 && progress.length <= 500);
    }
    assert.equal(remoteProgressMessage(undefined, 'https://mcp.example.com/mcp'), undefined);
    assert.equal(remoteProgressMessage('step 2 of 5 on 10.0.0.7\u0000', 'https://mcp.example.com/mcp'), 'step 2 of 5 on [address]');
  });

  it('say why a server is unavailable by category, never with the response body', () => {
    const http500 = Object.assign(new Error('Streamable HTTP error: Error POSTing to endpoint: <html>internal-db.corp:5432 stack trace</html>'), {});
    Object.setPrototypeOf(http500, StreamableHTTPError.prototype);
    (http500 as unknown as { code: number }).code = 500;
    assert.equal(unavailableReason(http500, 'https://mcp.example.com/mcp'), 'the server answered HTTP 500');
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.9.9.9:443'), { code: 'ECONNREFUSED' });
    assert.equal(unavailableReason(new Error('fetch failed', { cause: refused }), 'https://mcp.example.com/mcp'), 'the connection failed (ECONNREFUSED)');
    const blocked = Object.assign(new Error('the address of mcp.example.com is not allowed'), { code: 'EOUTBOUNDBLOCKED', hostname: 'mcp.example.com' });
    assert.match(unavailableReason(blocked, 'https://mcp.example.com/mcp'), /^the address of mcp\.example\.com is not allowed/);
    const named = Object.assign(new Error('the address of internal.corp is not allowed'), { code: 'EOUTBOUNDBLOCKED', hostname: 'internal.corp' });
    assert.ok(!unavailableReason(named, 'https://mcp.example.com/mcp').includes('internal.corp'));
    assert.equal(unavailableReason(new Error('<secret body text>'), 'https://mcp.example.com/mcp'), 'the server could not be reached or did not answer as an MCP server');
  });
});
