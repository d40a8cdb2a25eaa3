import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

// The layers of libs/ are enforced by `npm run lint` (eslint-plugin-boundaries, LAYERS and LIBS in
// eslint.config.js). These cases lint a made-up file placed in a lib, with the project's own config.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The boundaries messages of `code` as if it were the file `filePath`. */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === 'boundaries/dependencies').map((m) => m.message);
}

describe('lib layers (npm run lint)', () => {
  it('reports a lib importing a lib of a higher layer: engine importing #libs/runtime', async () => {
    const errors = await layerErrors('libs/engine/src/x.ts', "import { X } from '#libs/runtime';\nexport const y = X;\n");
    assert.equal(errors.length, 1);
    assert.match(errors[0], /lib engine may not import #libs\/runtime/);
  });

  it('accepts a lib importing a lower layer, and the same-layer libs listed for it', async () => {
    assert.deepEqual(await layerErrors('libs/engine/src/x.ts', "import { X } from '#libs/database';\nexport const y = X;\n"), []);
    assert.deepEqual(await layerErrors('libs/engine/src/x.ts', "import { X } from '#libs/agents';\nexport const y = X;\n"), []);
    assert.deepEqual(await layerErrors('apps/worker/src/x.ts', "import { X } from '#libs/runtime';\nexport const y = X;\n"), []);
  });

  it('accepts the whole of a clean file: no other rule fires on an allowed import', async () => {
    const [result] = await eslint.lintText("import { X } from '#libs/database';\nexport const y = X;\n", { filePath: 'libs/engine/src/x.ts' });
    assert.deepEqual(result.messages, []);
  });

  it('counts type-only imports, re-exports and import() as imports', async () => {
    for (const code of [
      "import type { X } from '#libs/engine';\nexport type Y = X;\n",
      "export { X } from '#libs/runtime';\n",
      "export const load = () => import('#libs/engine');\n",
    ]) {
      assert.equal((await layerErrors('libs/tools/src/x.ts', code)).length, 1, code);
    }
  });

  it('reports a same-layer import that LIBS does not list, and any import between foundation libs', async () => {
    assert.equal((await layerErrors('libs/agents/src/x.ts', "import { X } from '#libs/engine';\nexport const y = X;\n")).length, 1);
    assert.equal((await layerErrors('libs/errors/src/x.ts', "import { X } from '#libs/metrics';\nexport const y = X;\n")).length, 1);
    assert.equal((await layerErrors('libs/sdk/src/x.ts', "import { X } from '#libs/errors';\nexport const y = X;\n")).length, 1);
  });

  it('keeps the outbox below its subscribers: events may not import #libs/webhooks, webhooks may import #libs/events', async () => {
    assert.equal((await layerErrors('libs/events/src/x.ts', "import { X } from '#libs/webhooks';\nexport const y = X;\n")).length, 1);
    assert.deepEqual(await layerErrors('libs/webhooks/src/x.ts', "import { X } from '#libs/events';\nexport const y = X;\n"), []);
  });

  it('reports a relative path into another lib, even one the layers allow', async () => {
    const errors = await layerErrors('libs/engine/src/x.ts', "import { X } from '../../database/src/index.js';\nexport const y = X;\n");
    assert.equal(errors.length, 1);
    assert.match(errors[0], /relative path: import it as #libs\/database/);
    assert.deepEqual(await layerErrors('libs/engine/src/x.ts', "import { X } from './tables/sessions.repository.js';\nexport const y = X;\n"), []);
  });

  it('reports any import of an app, from a lib or from the other app', async () => {
    assert.match((await layerErrors('libs/engine/src/x.ts', "import { X } from '../../../apps/api/src/main.js';\nexport const y = X;\n"))[0], /nothing imports an app/);
    assert.match((await layerErrors('apps/api/src/x.ts', "import { X } from '../../worker/src/main.js';\nexport const y = X;\n"))[0], /nothing imports an app/);
  });
});
