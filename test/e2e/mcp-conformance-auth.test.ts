import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

// The auth scenarios of @modelcontextprotocol/conformance that a server-side agent's client can
// take: client credentials with a pre-registered client (client_secret_basic). The others need a
// person in the loop (authorization code, dynamic registration, client ID metadata documents) or
// private_key_jwt, which this client does not offer (README: MCP credentials from named secrets).
const CONFORMANCE = createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/dist/index.js');
const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'support', 'mcp-conformance-client.js');

function scenario(name: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CONFORMANCE, 'client', '--command', `"${process.execPath}" "${CLIENT}"`, '--scenario', name, '--timeout', '30000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Bounded: the runner's own timeout is 30 s per client run.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('MCP conformance: client auth scenarios', () => {
  for (const name of ['auth/client-credentials-basic', 'auth/pre-registration']) {
    it(`passes ${name}`, async () => {
      const { code, output } = await scenario(name);
      assert.equal(code, 0, output.slice(-4000));
      assert.match(output, /OVERALL: PASSED/);
      assert.match(output, /Passed: (\d+)\/\1, 0 failed, 0 warnings/);
    });
  }
});
