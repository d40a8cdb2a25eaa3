import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseDocument } from 'yaml';
import { chainOf, DOCKER, dockerfile, envExampleNames, execForm, instructionsOf, read, ROOT, tagProblem } from '../support/docker-files.js';

// docker/compose.yaml and the dashboards in docker/, checked without a Docker engine: what
// `docker compose up` would reject, and what ops relies on (health checks, scaling, Redis
// durability). Reads files only; it needs no stack.

const TOP_LEVEL = new Set(['version', 'name', 'include', 'services', 'models', 'networks', 'volumes', 'secrets', 'configs']);
// The service properties of the Compose specification (compose-spec.json, definitions.service).
const SERVICE_KEYS = new Set(
  `develop deploy annotations attach build blkio_config cap_add cap_drop cgroup cgroup_parent command configs
   container_name cpu_count cpu_percent cpu_shares cpu_quota cpu_period cpu_rt_period cpu_rt_runtime cpus cpuset
   credential_spec depends_on device_cgroup_rules devices dns dns_opt dns_search domainname entrypoint env_file
   label_file environment expose extends provider external_links extra_hosts gpus group_add healthcheck hostname
   image init ipc isolation labels links logging mac_address mem_limit mem_reservation mem_swappiness memswap_limit
   network_mode models networks oom_kill_disable oom_score_adj pid pids_limit platform ports post_start pre_stop
   privileged profiles pull_policy pull_refresh_after read_only restart runtime scale security_opt shm_size secrets
   sysctls stdin_open stop_grace_period stop_signal storage_opt tmpfs tty ulimits use_api_socket user uts
   userns_mode volumes volumes_from working_dir`.split(/\s+/),
);
const HEALTHCHECK_KEYS = new Set(['disable', 'interval', 'retries', 'test', 'timeout', 'start_period', 'start_interval']);
const BUILD_KEYS = new Set(['context', 'dockerfile', 'dockerfile_inline', 'args', 'ssh', 'labels', 'cache_from', 'cache_to', 'no_cache', 'additional_contexts', 'network', 'pull', 'target', 'shm_size', 'extra_hosts', 'isolation', 'privileged', 'secrets', 'tags', 'ulimits', 'platforms', 'entitlements', 'provenance', 'sbom']);
const CONDITIONS = new Set(['service_started', 'service_healthy', 'service_completed_successfully']);
const RESTART = /^(no|always|unless-stopped|on-failure(:\d+)?)$/;
const DURATION = /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/;
const SCALED = ['api', 'worker'];

type Json = Record<string, any>;

const composeText = read('docker', 'compose.yaml');
const composeDoc = parseDocument(composeText, { merge: true, uniqueKeys: true });
const interpolated = new Set<string>();
/** Compose interpolation with an empty environment: `${X:-d}` → d, `${X:?e}`, `${X}` → placeholders; `$$` → `$`. */
function interpolate(value: unknown): any {
  if (typeof value === 'string') {
    return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\$\{[^}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name?: string, op?: string, rest?: string, bare?: string) => {
      if (whole === '$$') return '$';
      interpolated.add((name ?? bare)!);
      if (op?.endsWith('-')) return interpolate(rest ?? '');
      return op?.endsWith('?') ? `<${name}>` : '';
    });
  }
  if (Array.isArray(value)) return value.map(interpolate);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item)]));
  return value;
}
const compose: Json = interpolate(composeDoc.toJS({ maxAliasCount: -1 }) ?? {});
const services: Record<string, Json> = compose.services ?? {};

function seconds(duration: string): number {
  const units: Record<string, number> = { ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const match of duration.matchAll(/(\d+(?:\.\d+)?)(ns|us|ms|s|m|h)/g)) total += Number(match[1]) * units[match[2]];
  return total;
}

/** One-shot services say so with restart "no"; every other service sets a restart policy explicitly. */
const isOneShot = (service: Json): boolean => service.restart === 'no';
const listOf = (value: unknown): string[] => (value === undefined ? [] : Array.isArray(value) ? value.map(String) : [String(value)]);

/** The HEALTHCHECK of the Dockerfile target a service builds, if any. */
function imageHealthcheck(service: Json): boolean {
  const target = service.build?.target;
  return typeof target === 'string' && instructionsOf(chainOf(dockerfile, target), 'HEALTHCHECK').some((i) => !/^NONE\b/.test(i.args));
}
const hasHealthcheck = (service: Json): boolean =>
  service.healthcheck ? service.healthcheck.disable !== true && listOf(service.healthcheck.test)[0] !== 'NONE' : imageHealthcheck(service);

/**
 * Host ports published with one fixed number (`8080:80`, `127.0.0.1:8080:80`, long syntax with
 * `published`): a second replica could not bind it. Ephemeral ports and ranges (`3000-3009:3000`) scale.
 */
function fixedHostPorts(service: Json): string[] {
  const published = (service.ports ?? []).map((port: unknown): string => {
    if (port && typeof port === 'object') return String((port as Json).published ?? '');
    const parts = String(port).split('/')[0].split(':');
    return parts.length >= 2 ? parts[parts.length - 2] : '';
  });
  return published.filter((port: string) => port !== '' && !/^\d+-\d+$/.test(port));
}

describe('docker/compose.yaml', () => {
  it('is valid YAML with unique keys and known top-level sections', () => {
    assert.deepEqual(composeDoc.errors.map(String), []);
    assert.deepEqual(composeDoc.warnings.map(String), []);
    const unknown = Object.keys(compose).filter((key) => !TOP_LEVEL.has(key) && !key.startsWith('x-'));
    assert.deepEqual(unknown, []);
    assert.equal(compose.version, undefined, 'the obsolete `version` key is left out');
    assert.ok(Object.keys(services).length > 0);
  });

  it('uses only service properties of the Compose specification, with valid values', () => {
    const problems: string[] = [];
    for (const [name, service] of Object.entries(services)) {
      assert.match(name, /^[a-zA-Z0-9._-]+$/);
      for (const key of Object.keys(service)) if (!SERVICE_KEYS.has(key) && !key.startsWith('x-')) problems.push(`${name}: unknown property ${key}`);
      if (service.build !== undefined && typeof service.build === 'object') {
        for (const key of Object.keys(service.build)) if (!BUILD_KEYS.has(key) && !key.startsWith('x-')) problems.push(`${name}: unknown build property ${key}`);
      }
      for (const key of Object.keys(service.healthcheck ?? {})) if (!HEALTHCHECK_KEYS.has(key) && !key.startsWith('x-')) problems.push(`${name}: unknown healthcheck property ${key}`);
      for (const key of ['interval', 'timeout', 'start_period', 'start_interval']) {
        const value = service.healthcheck?.[key];
        if (value !== undefined && !DURATION.test(String(value))) problems.push(`${name}: healthcheck.${key} "${value}" is not a duration`);
      }
      if (service.healthcheck?.test !== undefined) {
        const test = service.healthcheck.test;
        if (Array.isArray(test) && !['CMD', 'CMD-SHELL', 'NONE'].includes(test[0])) problems.push(`${name}: healthcheck.test starts with ${test[0]}, not CMD, CMD-SHELL or NONE`);
      }
      if (service.stop_grace_period !== undefined && !DURATION.test(String(service.stop_grace_period))) problems.push(`${name}: stop_grace_period is not a duration`);
      if (service.restart !== undefined && (typeof service.restart !== 'string' || !RESTART.test(service.restart))) {
        problems.push(`${name}: restart ${JSON.stringify(service.restart)} (quote "no": unquoted, YAML 1.1 readers see false)`);
      }
      if (service.environment !== undefined && (typeof service.environment !== 'object' || Array.isArray(service.environment))) problems.push(`${name}: environment as a mapping`);
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (value !== null && typeof value === 'object') problems.push(`${name}: environment.${key} is not a scalar`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('gives every service an image or a build of an existing Dockerfile target, images tagged and not latest', () => {
    const stages = new Set(dockerfile.stages.map((stage) => stage.name));
    for (const [name, service] of Object.entries(services)) {
      assert.ok(service.image || service.build, `${name}: image or build`);
      if (service.build) {
        const build = typeof service.build === 'string' ? { context: service.build } : service.build;
        const context = path.resolve(DOCKER, build.context ?? '.');
        assert.ok(existsSync(context) && statSync(context).isDirectory(), `${name}: build context ${build.context}`);
        assert.equal(context, ROOT, `${name}: builds from the repository root, as documented`);
        assert.ok(existsSync(path.resolve(context, build.dockerfile ?? 'Dockerfile')), `${name}: dockerfile ${build.dockerfile}`);
        if (build.target !== undefined) assert.ok(stages.has(build.target), `${name}: target ${build.target} is a Dockerfile stage`);
      }
      if (service.image) assert.equal(tagProblem(service.image), undefined, `${name}: image ${service.image}`);
    }
  });

  it('orders start-up with valid depends_on conditions and no cycles', () => {
    for (const [name, service] of Object.entries(services)) {
      const dependsOn = service.depends_on ?? {};
      assert.ok(!Array.isArray(dependsOn), `${name}: depends_on in the long form, with conditions`);
      for (const [dependency, spec] of Object.entries<Json>(dependsOn)) {
        assert.ok(services[dependency], `${name} depends on ${dependency}, which exists`);
        assert.ok(CONDITIONS.has(spec.condition), `${name} → ${dependency}: condition ${spec.condition}`);
        if (spec.condition === 'service_healthy') assert.ok(hasHealthcheck(services[dependency]), `${dependency} has a healthcheck for service_healthy`);
        if (spec.condition === 'service_completed_successfully') assert.ok(isOneShot(services[dependency]), `${dependency} is one-shot`);
      }
    }
    const visiting = new Set<string>();
    const done = new Set<string>();
    const visit = (name: string, trail: string[]): void => {
      if (done.has(name)) return;
      assert.ok(!visiting.has(name), `depends_on cycle: ${[...trail, name].join(' → ')}`);
      visiting.add(name);
      for (const dependency of Object.keys(services[name].depends_on ?? {})) visit(dependency, [...trail, name]);
      visiting.delete(name);
      done.add(name);
    };
    for (const name of Object.keys(services)) visit(name, []);
  });

  it('gives every long-running service a healthcheck and a restart policy; one-shot services restart "no"', () => {
    for (const [name, service] of Object.entries(services)) {
      if (isOneShot(service)) {
        assert.equal(service.restart, 'no', `${name}: one-shot with restart "no"`);
        continue;
      }
      assert.ok(hasHealthcheck(service), `${name}: healthcheck`);
      assert.match(String(service.restart), /^(always|unless-stopped|on-failure(:\d+)?)$/, `${name}: restart policy`);
    }
  });

  it('runs the migrations once, before api and worker start', () => {
    const migrate = services.migrate;
    assert.ok(migrate, 'a migrate service');
    assert.ok(isOneShot(migrate));
    const runsMigrations =
      listOf(migrate.command).join(' ').includes('migrate.js') ||
      execForm(instructionsOf(chainOf(dockerfile, migrate.build?.target ?? ''), 'CMD').pop()?.args ?? '')?.join(' ').includes('migrate.js');
    assert.ok(runsMigrations, 'migrate runs dist/libs/database/src/migrate.js');
    for (const name of SCALED) assert.equal(services[name]?.depends_on?.migrate?.condition, 'service_completed_successfully', `${name} waits for migrate`);
  });

  it('keeps api and worker scalable with --scale: no container_name, no fixed host port', () => {
    for (const name of SCALED) {
      const service = services[name];
      assert.ok(service, `a ${name} service`);
      assert.equal(service.container_name, undefined, `${name}: no container_name`);
      assert.deepEqual(fixedHostPorts(service), [], `${name}: no fixed host port`);
      assert.ok(!service.deploy?.replicas || service.deploy.replicas >= 1);
    }
    // Whatever publishes a fixed host port is a single instance, not a scaled app service.
    for (const [name, service] of Object.entries(services)) {
      if (fixedHostPorts(service).length > 0) assert.ok(!SCALED.includes(name), `${name} publishes a fixed host port`);
    }
  });

  it('gives api and worker the 30 s shutdown grace period, PID 1 signal handling and their health ports', () => {
    for (const name of SCALED) {
      const service = services[name];
      assert.ok(service.stop_grace_period, `${name}: stop_grace_period`);
      assert.ok(seconds(String(service.stop_grace_period)) >= 30, `${name}: stop_grace_period ≥ 30s`);
      assert.ok(service.stop_signal === undefined || service.stop_signal === 'SIGTERM', `${name}: stops with SIGTERM`);
      assert.ok(service.env_file, `${name}: env_file (docker/.env)`);
      assert.ok(service.environment?.DATABASE_URL && service.environment?.REDIS_URL, `${name}: DATABASE_URL and REDIS_URL`);
    }
    assert.ok(services.api.environment.API_KEY_HASH_SECRET, 'api: API_KEY_HASH_SECRET (required, the same on every replica)');
    const probe = (service: Json): string => listOf(service.healthcheck?.test).join(' ');
    assert.match(probe(services.api), new RegExp(`127\\.0\\.0\\.1:${services.api.environment.PORT ?? 3000}/health/live`), 'api probes /health/live on PORT');
    assert.match(probe(services.worker), new RegExp(`127\\.0\\.0\\.1:${services.worker.environment.WORKER_HEALTH_PORT}/health/live`), 'worker probes /health/live on WORKER_HEALTH_PORT');
  });

  it('runs Redis with append-only persistence and noeviction (BullMQ), on a volume', () => {
    const redis = services.redis;
    assert.ok(redis, 'a redis service');
    const command = Array.isArray(redis.command) ? redis.command.map(String) : String(redis.command ?? '').split(/\s+/);
    const option = (name: string): string | undefined => command[command.indexOf(name) + 1];
    assert.ok(command.includes('--appendonly'), `--appendonly in ${command.join(' ')}`);
    assert.equal(option('--appendonly'), 'yes');
    assert.equal(option('--maxmemory-policy'), 'noeviction');
    assert.ok(listOf(redis.volumes).some((volume) => volume.endsWith(':/data')), 'redis data on a volume');
  });

  it('runs Postgres 14 or later on a volume', () => {
    const postgres = services.postgres;
    assert.ok(postgres, 'a postgres service');
    const major = Number(/^postgres:(\d+)/.exec(postgres.image)?.[1]);
    assert.ok(major >= 14, `postgres image ${postgres.image}`);
    assert.ok(listOf(postgres.volumes).some((volume) => volume.endsWith(':/var/lib/postgresql/data')), 'postgres data on a volume');
  });

  it('declares the named volumes it mounts and ships the files it binds', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, service] of Object.entries(services)) {
      for (const volume of service.volumes ?? []) {
        const spec = typeof volume === 'string' ? { type: undefined, source: volume.split(':')[0] } : volume;
        const bind = spec.type === 'bind' || /^[./~]/.test(spec.source ?? '');
        if (bind) assert.ok(existsSync(path.resolve(DOCKER, spec.source)), `${name}: bind source ${spec.source} exists in docker/`);
        else if (spec.source) assert.ok(declared.has(spec.source), `${name}: volume ${spec.source} declared under volumes`);
      }
    }
  });

  it('balances the api replicas through lb: SSE unbuffered, the api port, the body limit', () => {
    const lb = Object.entries(services).find(([, service]) => fixedHostPorts(service).length > 0);
    assert.ok(lb, 'one service publishes the api to the host');
    const conf = read('docker', 'nginx.conf');
    assert.match(conf, new RegExp(`http://api:${services.api.environment.PORT ?? 3000}\\b`), 'proxies to the api service on its PORT');
    assert.match(conf, /resolver 127\.0\.0\.11\b/, "re-resolves the replicas through Docker's DNS");
    assert.match(conf, /proxy_buffering off;/, 'SSE events are not buffered');
    assert.match(conf, /client_max_body_size 100m;/, 'bodies up to BODY_LIMIT (100mb) pass');
    assert.equal(lb[1].depends_on?.api?.condition, 'service_healthy', `${lb[0]} waits for a healthy api`);
  });

  it('reads every interpolated variable from the documented docker/.env', () => {
    const documented = envExampleNames();
    for (const [name, service] of Object.entries(services)) {
      for (const file of listOf(service.env_file)) assert.equal(file, '.env', `${name}: env_file is docker/.env (template docker/.env.example)`);
    }
    const missing = [...interpolated].filter((name) => !documented.has(name)).sort();
    assert.deepEqual(missing, [], `variables compose.yaml interpolates but docker/.env.example does not list: ${missing.join(', ')}`);
  });

  it('leaves the scripted demo models off, as the application defaults them', () => {
    // Neither the images nor compose turn them on; the template shows the default commented out.
    assert.doesNotMatch(read('docker', 'Dockerfile'), /SCRIPTED_MODELS/);
    assert.doesNotMatch(read('docker', 'compose.yaml'), /SCRIPTED_MODELS/);
    assert.deepEqual(read('docker', '.env.example').match(/^#?\s*SCRIPTED_MODELS=.*$/gm), ['# SCRIPTED_MODELS=disabled']);
  });
});

describe('docker/ JSON files (Grafana dashboards)', () => {
  const files = readdirSync(DOCKER, { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.json'));
  it('parse as JSON', () => {
    for (const file of files) {
      assert.doesNotThrow(() => JSON.parse(readFileSync(path.join(DOCKER, file), 'utf8')), file);
    }
  });
  for (const file of files.filter((name) => name.split(path.sep).includes('grafana'))) {
    it(`${file} is a dashboard with panels`, () => {
      const dashboard = JSON.parse(readFileSync(path.join(DOCKER, file), 'utf8'));
      const panels = dashboard.panels ?? dashboard.dashboard?.panels;
      assert.ok(Array.isArray(panels) && panels.length > 0, `${file}: panels`);
    });
  }
});
