// `npm start` and `npm test` launch the stack through scripts/lib/stack.mjs: what it defaults for a
// stack on one machine never overrides what the environment says explicitly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromRoot } from '../support/stack-scripts.js';

type Defaults = (env: Record<string, string | undefined>) => Record<string, string>;

describe('stack defaults for local networks', () => {
  it('allow private webhook and MCP targets when unset, and keep an explicit false', async () => {
    const { localNetworkDefaults } = await loadFromRoot<{ localNetworkDefaults: Defaults }>('scripts/lib/stack.mjs');
    assert.deepEqual(localNetworkDefaults({}), { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', MCP_ALLOW_PRIVATE_NETWORKS: 'true' });
    assert.deepEqual(localNetworkDefaults({ MCP_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }), {
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false',
      MCP_ALLOW_PRIVATE_NETWORKS: 'false',
    });
    assert.equal(localNetworkDefaults({ MCP_ALLOW_PRIVATE_NETWORKS: '0' }).MCP_ALLOW_PRIVATE_NETWORKS, '0');
  });
});
