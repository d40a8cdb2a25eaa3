import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from './model.types.js';

const DIRECTIVE = /\[\[(\w+)(?::([^\]]*))?\]\]/g;
const FILLER = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit'];

interface Script {
  delayMs: number;
  words: number | null;
  fail: string | null;
  text: string;
}

/**
 * `scripted:<name>`: a deterministic model for demos, contract tests and load tests, needing no
 * network. It answers the latest user text with `Echo: <text>`, one word per delta, and obeys the
 * directives of PROTOCOL.md that this build supports ([[delay:MS]], [[words:N]], [[fail:CODE]]).
 */
@Injectable()
export class ScriptedProvider implements ModelProvider {
  readonly provider = 'scripted';

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const latest = [...request.messages].reverse().find((m) => m.role === 'user')?.text ?? '';
    const script = parseScript(latest);
    if (script.fail) throw new ModelError(script.fail, `scripted model failed with ${script.fail}`);
    const words = script.words === null ? ['Echo:', ...script.text.split(/\s+/).filter(Boolean)] : filler(script.words);
    for (const [index, word] of words.entries()) {
      if (script.delayMs > 0) await sleep(script.delayMs, undefined, { signal: request.signal });
      request.signal.throwIfAborted();
      yield { type: 'text_delta', delta: index === 0 ? word : ` ${word}` };
    }
  }
}

function parseScript(text: string): Script {
  const script: Script = { delayMs: 0, words: null, fail: null, text: text.replace(DIRECTIVE, ' ').trim() };
  for (const [, name, arg = ''] of text.matchAll(DIRECTIVE)) {
    if (name === 'delay') script.delayMs = clampInt(arg, 0, 600_000);
    else if (name === 'words') script.words = clampInt(arg, 1, 100_000);
    else if (name === 'fail') script.fail = arg.trim() || 'model_error';
  }
  return script;
}

function clampInt(raw: string, min: number, max: number): number {
  const value = Number.parseInt(raw, 10);
  return Number.isFinite(value) ? Math.min(Math.max(value, min), max) : min;
}

function filler(count: number): string[] {
  return Array.from({ length: count }, (_, i) => FILLER[i % FILLER.length] ?? 'lorem');
}
