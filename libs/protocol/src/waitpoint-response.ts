import type { FieldError } from '#libs/errors';
import type { WaitpointResponse } from '#libs/engine';

const DECISIONS = ['approve', 'reject', 'approve_session'];

/** Parses the `response` of a resume event into its one of two shapes, listing every problem with its path. */
export function parseWaitpointResponse(raw: Record<string, unknown>, path: string): { response: WaitpointResponse | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const fail = (field: string, error: string): void => void errors.push({ field: `${path}.${field}`, errors: [error] });
  const only = (value: Record<string, unknown>, keys: string[], at: string): void => {
    for (const key of Object.keys(value)) if (!keys.includes(key)) fail(at ? `${at}.${key}` : key, 'is an unknown field');
  };
  const list = (key: string): Record<string, unknown>[] => {
    const value = raw[key];
    if (!Array.isArray(value) || value.length === 0 || value.length > 100) {
      fail(key, 'must be an array of 1–100 objects');
      return [];
    }
    return value.map((entry: unknown, i) => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail(`${key}[${i}]`, 'must be an object');
      return (entry ?? {}) as Record<string, unknown>;
    });
  };
  const id = (value: unknown, field: string): string => {
    if (typeof value !== 'string' || value.length === 0 || value.length > 128) fail(field, 'must be a string of 1–128 characters');
    return String(value);
  };
  if (raw.type === 'answer') {
    only(raw, ['type', 'answers'], '');
    const answers = list('answers').map((entry, i) => {
      only(entry, ['question_id', 'answer'], `answers[${i}]`);
      const answer = entry.answer;
      const valid = (typeof answer === 'string' && answer.length <= 10_000) || (Array.isArray(answer) && answer.length <= 100 && answer.every((a) => typeof a === 'string' && a.length <= 10_000));
      if (!valid) fail(`answers[${i}].answer`, 'must be a string or an array of strings');
      return { question_id: id(entry.question_id, `answers[${i}].question_id`), answer: answer as string | string[] };
    });
    return { response: errors.length ? null : { type: 'answer', answers }, errors };
  }
  if (raw.type === 'approval') {
    only(raw, ['type', 'decisions'], '');
    const decisions = list('decisions').map((entry, i) => {
      only(entry, ['call_id', 'decision', 'message'], `decisions[${i}]`);
      if (!DECISIONS.includes(entry.decision as string)) fail(`decisions[${i}].decision`, `must be one of ${DECISIONS.join(', ')}`);
      if (entry.message !== undefined && (typeof entry.message !== 'string' || entry.message.length > 2000)) fail(`decisions[${i}].message`, 'must be a string of at most 2000 characters');
      return {
        call_id: id(entry.call_id, `decisions[${i}].call_id`),
        decision: entry.decision as 'approve' | 'reject' | 'approve_session',
        ...(typeof entry.message === 'string' ? { message: entry.message } : {}),
      };
    });
    return { response: errors.length ? null : { type: 'approval', decisions }, errors };
  }
  fail('type', 'must be "answer" or "approval"');
  return { response: null, errors };
}
