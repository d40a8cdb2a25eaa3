import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The deployment files in docker/ as the tests read them (docker-dockerfile, docker-compose and
// settings-docs in test/e2e): without a Docker engine, files only.

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const DOCKER = path.join(ROOT, 'docker');
export const read = (...parts: string[]): string => readFileSync(path.join(ROOT, ...parts), 'utf8');

/** Names in `NAME=` lines, commented out or not. */
export function envExampleNames(): Set<string> {
  return new Set([...read('docker', '.env.example').matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]));
}

// ---------------------------------------------------------------------------------------------
// Dockerfile: a parser for the subset of the syntax a linter needs (no heredocs).

export const INSTRUCTIONS = new Set([
  'FROM', 'RUN', 'CMD', 'LABEL', 'MAINTAINER', 'EXPOSE', 'ENV', 'ADD', 'COPY', 'ENTRYPOINT',
  'VOLUME', 'USER', 'WORKDIR', 'ARG', 'ONBUILD', 'STOPSIGNAL', 'HEALTHCHECK', 'SHELL',
]);

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  name: string | undefined;
  /** The image or the earlier stage it starts from, global ARGs substituted. */
  base: string;
  line: number;
  instructions: Instruction[];
}

export interface Dockerfile {
  stages: Stage[];
  /** Problems found while parsing: unknown instructions, instructions before FROM, bad syntax. */
  errors: string[];
}

export function parseDockerfile(text: string): Dockerfile {
  const lines = text.split('\n');
  let escape = '\\';
  // Parser directives: `# name=value` lines at the very top, before any comment or instruction.
  for (const line of lines) {
    const directive = /^#\s*([a-z]+)\s*=\s*(\S+)\s*$/i.exec(line);
    if (!directive) break;
    if (directive[1].toLowerCase() === 'escape') escape = directive[2];
  }
  const logical: Instruction[] = [];
  let buffer = '';
  let start = 0;
  lines.forEach((raw, index) => {
    const trimmed = raw.trim();
    // Comment lines are dropped, also inside a continued instruction; so are blank lines.
    if (trimmed.startsWith('#') || trimmed === '') return;
    if (buffer === '') start = index + 1;
    const continued = trimmed.endsWith(escape);
    buffer += (buffer ? ' ' : '') + (continued ? trimmed.slice(0, -escape.length).trim() : trimmed);
    if (continued) return;
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/s.exec(buffer) ?? [];
    logical.push({ keyword: keyword.toUpperCase(), args: args.trim(), line: start });
    buffer = '';
  });
  const errors: string[] = [];
  if (buffer) errors.push(`line ${start}: the file ends inside a continued instruction`);

  const globalArgs = new Map<string, string>();
  const stages: Stage[] = [];
  for (const instruction of logical) {
    const { keyword, args, line } = instruction;
    if (!INSTRUCTIONS.has(keyword)) {
      errors.push(`line ${line}: unknown instruction ${keyword}`);
      continue;
    }
    if (/<<-?\s*["']?[A-Za-z_]+["']?\s*$/m.test(args)) errors.push(`line ${line}: heredocs are not checked here`);
    if (keyword === 'FROM') {
      const words = args.split(/\s+/).filter((word) => !word.startsWith('--'));
      const name = words.length === 3 && words[1].toUpperCase() === 'AS' ? words[2] : undefined;
      if (words.length !== 1 && name === undefined) errors.push(`line ${line}: FROM must be "image [AS name]", got "${args}"`);
      const base = words[0].replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, arg: string) => globalArgs.get(arg) ?? '');
      stages.push({ name, base, line, instructions: [] });
      continue;
    }
    if (stages.length === 0) {
      if (keyword !== 'ARG') errors.push(`line ${line}: ${keyword} before the first FROM`);
      const [argName, value = ''] = args.split('=');
      globalArgs.set(argName, value.replace(/^"|"$/g, ''));
      continue;
    }
    stages[stages.length - 1].instructions.push(instruction);
  }
  const names = stages.map((stage) => stage.name).filter(Boolean);
  if (new Set(names).size !== names.length) errors.push('stage names are not unique');
  return { stages, errors };
}

/** The stages a target is built from, oldest first: its FROM chain through earlier stages. */
export function chainOf(file: Dockerfile, target: string): Stage[] {
  const chain: Stage[] = [];
  let stage = file.stages.find((candidate) => candidate.name === target);
  while (stage) {
    chain.unshift(stage);
    const base = stage.base;
    stage = file.stages.slice(0, file.stages.indexOf(stage)).find((candidate) => candidate.name === base);
  }
  return chain;
}

export function instructionsOf(chain: Stage[], keyword: string): Instruction[] {
  return chain.flatMap((stage) => stage.instructions.filter((instruction) => instruction.keyword === keyword));
}

/** `["node", "x.js"]` → the array; anything else (shell form) → undefined. */
export function execForm(args: string): string[] | undefined {
  try {
    const value: unknown = JSON.parse(args);
    return Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

/** ENV in both forms: `K=V K2="V 2"` and the legacy `K V`. */
export function envOf(chain: Stage[]): Map<string, string> {
  const env = new Map<string, string>();
  for (const { args } of instructionsOf(chain, 'ENV')) {
    if (!args.includes('=')) {
      const [name, ...value] = args.split(/\s+/);
      env.set(name, value.join(' '));
      continue;
    }
    for (const match of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) env.set(match[1], match[2].replace(/^"|"$/g, ''));
  }
  return env;
}

/** An image reference must carry an explicit tag (or digest) that is not `latest`. */
export function tagProblem(image: string): string | undefined {
  if (image.includes('@sha256:')) return undefined;
  const lastPart = image.split('/').pop() ?? image;
  if (!lastPart.includes(':')) return `${image}: no explicit tag`;
  if (lastPart.endsWith(':latest')) return `${image}: the latest tag`;
  return undefined;
}

export const npmInstalls = (stage: Stage): string[] =>
  stage.instructions.filter((i) => i.keyword === 'RUN' && /\bnpm\s+(ci|install|i)\b/.test(i.args)).map((i) => i.args);

export const dockerfile = parseDockerfile(read('docker', 'Dockerfile'));

export const TARGETS = {
  api: { script: 'dist/apps/api/src/main.js', source: 'apps/api/src/main.ts', portEnv: 'PORT' },
  worker: { script: 'dist/apps/worker/src/main.js', source: 'apps/worker/src/main.ts', portEnv: 'WORKER_HEALTH_PORT' },
} as const;
