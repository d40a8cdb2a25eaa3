import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { ModelError, type ModelEvent, type ModelMessage, type ModelProvider, type ModelRequest, neutralRequestBody } from './model.types.js';
import { filler, parseScript, type ScriptStep, scriptedSummary } from './scripted-script.js';
import { countTokens, IMAGE_TOKENS, imageTokens, MESSAGE_OVERHEAD_TOKENS, SCRIPTED_WINDOW_TOKENS } from './tokens.js';

/** The failures a real provider would also retry, so that scripts can exercise the retry loop. */
const RETRYABLE_FAILURES = new Set(['model_rate_limited', 'model_unavailable', 'model_timeout']);

/**
 * `scripted:<name>`: a deterministic model for demos, contract tests and load tests, needing no
 * network. It answers the latest user text with `Echo: <text>`, one word per delta, and obeys the
 * directives (README "Agents, models and tools": [[delay:MS]], [[words:N]], [[tool:NAME {json}]], [[ask:QUESTION]],
 * [[fail:CODE]]). Tool and ask directives are steps: the conversation's tool results after the
 * latest user message say how many are done, so the script needs no state of its own.
 */
@Injectable()
export class ScriptedProvider implements ModelProvider {
  readonly provider = 'scripted';

  constructor(private readonly config: AppConfig) {}

  /** The scripted model reads the provider-neutral request itself: that is what it was sent. */
  requestBody(request: ModelRequest): object {
    return neutralRequestBody(request);
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const { messages, signal } = request;
    const inputTokens = await countRequestTokens(request);
    // Like a real provider, a request longer than the documented window is refused (not retryable).
    if (inputTokens > SCRIPTED_WINDOW_TOKENS) {
      throw new ModelError('model_context_length_exceeded', `scripted model: the request has ${inputTokens} tokens, more than its window of ${SCRIPTED_WINDOW_TOKENS}`);
    }
    if (request.purpose === 'compaction') {
      const last = messages.at(-1);
      const summary = scriptedSummary(last?.role === 'user' ? last.text : '');
      yield { type: 'text_delta', delta: summary };
      yield usage(inputTokens, await countTokens(summary));
      return;
    }
    // The images a tool returned are no directive of the user's.
    const latest = messages.findLastIndex((m) => m.role === 'user' && !m.toolImages);
    const latestMessage = messages[latest];
    const script = parseScript(latestMessage?.role === 'user' ? latestMessage.text : '');
    // Directives come from users: capped, so a message cannot hold a worker slot for days.
    script.delayMs = Math.min(script.delayMs, this.config.scriptedMaxDelayMs);
    if (script.words !== null) script.words = Math.min(script.words, this.config.scriptedMaxWords);
    if (script.fail) throw new ModelError(script.fail, `scripted model failed with ${script.fail}`, RETRYABLE_FAILURES.has(script.fail));
    const results = messages.slice(latest + 1).flatMap((m) => (m.role === 'tool' ? [m.output] : []));
    const step = script.steps[results.length];
    if (step) {
      await pause(script.delayMs, signal);
      yield { type: 'tool_call', call: { call_id: `call_${randomBytes(12).toString('hex')}`, name: step.name, arguments: step.arguments } };
      yield usage(inputTokens, 1);
      yield { type: 'finish', reason: 'tool_calls' };
      return;
    }
    const finished = script.steps.at(-1);
    const words = finished
      ? answerWords(finished, results.at(-1) ?? '')
      : script.words === null
        ? ['Echo:', ...splitWords(script.text)]
        : filler(script.words);
    for (const [index, word] of words.entries()) {
      await pause(script.delayMs, signal);
      yield { type: 'text_delta', delta: index === 0 ? word : ` ${word}` };
    }
    yield usage(inputTokens, words.length);
    yield { type: 'finish', reason: 'stop' };
  }
}

function answerWords(step: ScriptStep, output: string): string[] {
  const lead = step.kind === 'ask' ? ['Answer:'] : ['Tool', step.name, 'returned:'];
  return [...lead, ...splitWords(output)];
}

async function pause(delayMs: number, signal: AbortSignal): Promise<void> {
  if (delayMs > 0) await sleep(delayMs, undefined, { signal });
  signal.throwIfAborted();
}

/** The request's tokens as a provider would count them: instructions, messages and tools (deterministic). */
async function countRequestTokens({ instructions, messages, tools }: ModelRequest): Promise<number> {
  let total = instructions ? (await countCached(instructions)) + MESSAGE_OVERHEAD_TOKENS : 0;
  for (const message of messages) {
    // Images by their size, as the provider counts them (IMAGE_TOKENS where none was measured).
    const images = message.role === 'user' ? (message.parts ?? []).reduce((sum, part) => sum + (part.type !== 'image' ? 0 : part.width && part.height ? imageTokens(part.width, part.height) : IMAGE_TOKENS), 0) : 0;
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []).map((call) => `${call.name}${call.arguments}`).join('') : '';
    total += (await countCached(messageText(message) + calls)) + images + MESSAGE_OVERHEAD_TOKENS;
  }
  return total + (tools.length > 0 ? await countCached(JSON.stringify(tools)) : 0);
}

/** A session's history is sent again with every call: its texts are counted once (a bounded memo). */
const COUNTED = new Map<string, number>();
const MAX_COUNTED = 20_000;

async function countCached(text: string): Promise<number> {
  const known = COUNTED.get(text);
  if (known !== undefined) return known;
  const tokens = await countTokens(text);
  if (COUNTED.size >= MAX_COUNTED) COUNTED.clear();
  COUNTED.set(text, tokens);
  return tokens;
}

function messageText(message: ModelMessage): string {
  return message.role === 'tool' ? message.output : message.text;
}

function splitWords(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

function usage(input: number, output: number): ModelEvent {
  return { type: 'usage', usage: { input_tokens: input, output_tokens: output, cached_tokens: 0, total_tokens: input + output } };
}
