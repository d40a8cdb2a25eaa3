import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { chainOf, dockerfile, envOf, execForm, type Instruction, instructionsOf, npmInstalls, read, ROOT, tagProblem, TARGETS } from '../support/docker-files.js';

// docker/Dockerfile checked without a Docker engine (its parser: test/support/docker-files.ts): what
// `docker build` would reject, and what ops relies on (non-root, health checks, graceful stop).
// Reads files only; it needs no stack. compose.yaml: docker-compose.test.ts; every setting
// documented: settings-docs.test.ts.

describe('docker/Dockerfile', () => {
  it('has only known instructions, FROM first, well-formed stages', () => {
    assert.deepEqual(dockerfile.errors, []);
    assert.ok(dockerfile.stages.length >= 3, 'multi-stage');
  });

  it('names every base image with a tag that is not latest, and copies only from earlier stages', () => {
    const problems: string[] = [];
    dockerfile.stages.forEach((stage, index) => {
      const earlier = dockerfile.stages.slice(0, index).map((s) => s.name);
      if (!earlier.includes(stage.base)) {
        const problem = tagProblem(stage.base);
        if (problem) problems.push(`line ${stage.line}: FROM ${problem}`);
      }
      for (const copy of stage.instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')) {
        const from = /--from=(\S+)/.exec(copy.args)?.[1];
        if (from !== undefined && !earlier.includes(from) && tagProblem(from) !== undefined) {
          problems.push(`line ${copy.line}: COPY --from=${from} is neither an earlier stage nor a tagged image`);
        }
        if (copy.keyword === 'ADD' && /https?:\/\//.test(copy.args)) problems.push(`line ${copy.line}: ADD of a URL`);
      }
    });
    assert.deepEqual(problems, []);
  });

  it('builds with every dependency and tsc in a build stage', () => {
    const build = dockerfile.stages.find((stage) => stage.instructions.some((i) => i.keyword === 'RUN' && /\btsc\b/.test(i.args)));
    assert.ok(build?.name, 'a named stage runs tsc');
    const chain = chainOf(dockerfile, build.name!);
    assert.ok(chain.flatMap(npmInstalls).some((run) => /\bnpm\s+ci\b/.test(run) && !/--omit=dev/.test(run)), 'the build stage (or its base) runs a full `npm ci`');
  });

  for (const [target, expected] of Object.entries(TARGETS)) {
    describe(`target ${target}`, () => {
      const chain = chainOf(dockerfile, target);
      const last = (keyword: string): Instruction | undefined => instructionsOf(chain, keyword).pop();

      it('exists', () => {
        assert.ok(chain.length > 0, `a stage named ${target}`);
      });

      it('runs as a non-root user, numeric for Kubernetes runAsNonRoot', () => {
        const user = last('USER')?.args;
        assert.ok(user, 'USER is set');
        const [name] = user.split(':');
        assert.notEqual(name, 'root');
        assert.match(name, /^[1-9][0-9]*$/, 'a numeric, non-zero uid');
      });

      it('runs in production mode, on the compiled code, with production dependencies only', () => {
        assert.equal(envOf(chain).get('NODE_ENV'), 'production');
        // Nothing in the target's own FROM chain installs dev dependencies...
        const installs = chain.flatMap(npmInstalls);
        assert.deepEqual(installs.filter((run) => !/--omit=dev/.test(run)), [], 'no full `npm ci` in the runtime stages');
        // ...and node_modules comes from a stage that installs with `npm ci --omit=dev`.
        const copies = instructionsOf(chain, 'COPY');
        const modules = copies.find((copy) => /--from=\S+/.test(copy.args) && /node_modules/.test(copy.args));
        const source = modules ? /--from=(\S+)/.exec(modules.args)![1] : undefined;
        const sourceInstalls = source ? chainOf(dockerfile, source).flatMap(npmInstalls) : installs;
        assert.ok(sourceInstalls.length > 0 && sourceInstalls.every((run) => /\bnpm\s+ci\b/.test(run) && /--omit=dev/.test(run)), 'node_modules from `npm ci --omit=dev`');
        assert.ok(
          copies.some((copy) => /--from=\S+/.test(copy.args) && /\bdist\b/.test(copy.args)),
          'the compiled dist/ comes from the build stage',
        );
        assert.ok(copies.some((copy) => /\bpackage\.json\b/.test(copy.args)), 'package.json ("type": "module", "imports") sits next to dist/');
      });

      it('starts the app with an exec-form CMD', () => {
        const cmd = last('CMD');
        assert.ok(cmd, 'CMD is set');
        const argv = execForm(cmd.args);
        assert.ok(argv, `CMD in exec form, got ${cmd.args}`);
        assert.deepEqual(argv, ['node', expected.script]);
        assert.ok(existsSync(path.join(ROOT, expected.source)), `${expected.source} exists`);
        const entrypoint = last('ENTRYPOINT');
        if (entrypoint) assert.ok(execForm(entrypoint.args), 'ENTRYPOINT in exec form');
      });

      it('checks its health on /health/live at the port it exposes, with node (no curl in slim images)', () => {
        const healthcheck = last('HEALTHCHECK');
        assert.ok(healthcheck, 'HEALTHCHECK is set');
        const match = /^((?:--[a-z-]+=\S+\s+)*)CMD\s+(.*)$/s.exec(healthcheck.args);
        assert.ok(match, `HEALTHCHECK [options] CMD ..., got ${healthcheck.args}`);
        for (const option of match[1].trim().split(/\s+/).filter(Boolean)) {
          assert.match(option, /^--(interval|timeout|start-period|start-interval|retries)=\S+$/);
        }
        const argv = execForm(match[2]);
        assert.ok(argv, 'HEALTHCHECK CMD in exec form');
        assert.equal(argv[0], 'node');
        const script = argv.join(' ');
        assert.match(script, /\/health\/live/);
        assert.ok(script.includes(`process.env.${expected.portEnv}`), `probes the port in ${expected.portEnv}`);
        const port = envOf(chain).get(expected.portEnv);
        assert.match(port ?? '', /^[1-9][0-9]*$/, `${expected.portEnv} has a default in the image`);
        const exposed = instructionsOf(chain, 'EXPOSE').flatMap((i) => i.args.split(/\s+/)).map((p) => p.split('/')[0]);
        assert.ok(exposed.includes(port!), `EXPOSE ${port}`);
      });

      it('stops on SIGTERM', () => {
        assert.equal(last('STOPSIGNAL')?.args, 'SIGTERM');
      });
    });
  }

  it('gives the worker what sessions\' sandboxes run: bubblewrap, socat, prlimit, git, python3 and common tools', () => {
    const runs = instructionsOf(chainOf(dockerfile, 'worker'), 'RUN').map((run) => run.args);
    const installed = runs.filter((run) => /apt-get install/.test(run)).join(' ');
    for (const pkg of ['bubblewrap', 'socat', 'util-linux', 'git', 'python3', 'curl', 'ca-certificates', 'patch', 'findutils', 'procps']) {
      assert.match(installed, new RegExp(`\\s${pkg}(\\s|$)`), `the worker image installs ${pkg}`);
    }
    assert.ok(runs.some((run) => /rm -rf \/var\/lib\/apt\/lists/.test(run)), 'apt lists removed in the same layer');
  });

  it('has a one-shot migrate target running the migrations', () => {
    const chain = chainOf(dockerfile, 'migrate');
    assert.ok(chain.length > 0, 'a stage named migrate');
    assert.deepEqual(execForm(instructionsOf(chain, 'CMD').pop()?.args ?? ''), ['node', 'dist/libs/database/src/migrate.js']);
    assert.ok(existsSync(path.join(ROOT, 'libs/database/src/migrate.ts')));
    assert.ok(instructionsOf(chain, 'USER').pop()?.args.split(':')[0].match(/^[1-9][0-9]*$/), 'non-root');
  });

  it('has a build context (.dockerignore) that keeps node_modules and secrets out and the sources in', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    for (const pattern of ['**/node_modules', '.env', '.git']) assert.ok(ignored.includes(pattern), `.dockerignore lists ${pattern}`);
    for (const needed of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'apps', 'libs']) {
      assert.ok(!ignored.some((pattern) => pattern === needed || pattern === `${needed}/` || pattern === `/${needed}`), `${needed} stays in the context`);
    }
  });

  // hadolint is not installable here (no network binaries); the parse checks above are the Dockerfile lint.
});
