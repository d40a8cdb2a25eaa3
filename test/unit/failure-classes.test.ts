import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failureRetryable, isTransientFailure, TURN_FAILURE_CODES } from '#libs/errors';
import { BUILTIN_TOOLS, coordinationTools } from '#libs/tools';
import { EVENT_TYPES } from '#libs/events';

describe('classifiable failures: retryable from the cause and the side effects', () => {
  it('a transient cause is retryable unless a tool that may change something and is not idempotent ran', () => {
    for (const code of ['model_rate_limited', 'model_timeout', 'model_unavailable', 'run_failed']) {
      assert.equal(isTransientFailure(code), true, code);
      assert.equal(failureRetryable(code, false), true, code);
      assert.equal(failureRetryable(code, true), false, code);
    }
  });

  it('a cause the same input meets again is never retryable, nor a code outside the catalogue', () => {
    for (const code of ['model_bad_request', 'model_auth_failed', 'model_context_length_exceeded', 'turn_model_call_limit', 'turn_tool_call_limit', 'turn_timeout', 'context_window_exceeded', 'operator_failed', 'made_up', 'constructor', 'toString']) {
      assert.equal(isTransientFailure(code), false, code);
      for (const unsafeEffects of [false, true]) assert.equal(failureRetryable(code, unsafeEffects), false, `${code} ${unsafeEffects}`);
    }
  });

  it('workers dying on the same turn again and again is not transient: a crash loop meets the same input again', () => {
    assert.equal(isTransientFailure('run_takeover_limit'), false);
    assert.equal(failureRetryable('run_takeover_limit', false), false);
  });

  it('every server builtin decides whether it may change something: each is a read or a question', () => {
    for (const [name, def] of Object.entries(BUILTIN_TOOLS)) assert.equal(def.sideEffects, false, name);
  });

  it('coordination calls that create, message or interrupt members may change something; a wait does not', () => {
    const flags = Object.fromEntries(coordinationTools().map((tool) => [tool.name, tool.sideEffects]));
    assert.deepEqual(flags, { create_subagent: true, message_subagent: true, wait_subagents: false, interrupt_subagent: true });
  });

  it('every failure code the turn.failed event documents is in the catalogue', () => {
    const documented = [...EVENT_TYPES['agent.session.turn.failed'].matchAll(/`([a-z_]+)`/g)].map((match) => match[1]!).filter((word) => word.includes('_') && !['turn_id', 'side_effects'].includes(word));
    assert.ok(documented.length >= 12, documented.join(', '));
    for (const code of documented) assert.ok(Object.hasOwn(TURN_FAILURE_CODES, code), code);
  });
});
