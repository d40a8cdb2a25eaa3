import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAILURE_SIDE_EFFECTS, failureRetryable, isTransientFailure, TURN_FAILURE_CODES } from '#libs/errors';
import { EVENT_TYPES } from '#libs/events';

describe('classifiable failures: retryable from the cause and the side effects', () => {
  it('a transient cause is retryable unless a side effect may repeat', () => {
    for (const code of ['model_rate_limited', 'model_timeout', 'model_unavailable', 'run_failed', 'run_takeover_limit']) {
      assert.equal(failureRetryable(code, 'none'), true, code);
      assert.equal(failureRetryable(code, 'output'), true, code);
      assert.equal(failureRetryable(code, 'possible'), false, code);
    }
  });

  it('a cause the same input meets again is never retryable, nor a code outside the catalogue', () => {
    for (const code of ['model_bad_request', 'model_auth_failed', 'model_context_length_exceeded', 'turn_model_call_limit', 'turn_tool_call_limit', 'turn_timeout', 'context_window_exceeded', 'operator_failed', 'made_up', 'constructor', 'toString']) {
      assert.equal(isTransientFailure(code), false, code);
      for (const sideEffects of FAILURE_SIDE_EFFECTS) assert.equal(failureRetryable(code, sideEffects), false, `${code} ${sideEffects}`);
    }
  });

  it('every failure code the turn.failed event documents is in the catalogue', () => {
    const documented = [...EVENT_TYPES['agent.session.turn.failed'].matchAll(/`([a-z_]+)`/g)].map((match) => match[1]!).filter((word) => word.includes('_') && !['turn_id', 'side_effects'].includes(word));
    assert.ok(documented.length >= 12, documented.join(', '));
    for (const code of documented) assert.ok(Object.hasOwn(TURN_FAILURE_CODES, code), code);
  });
});
