import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { BudgetsRepository, firstBudgetWithoutRoom } from '#libs/budgets';
import { DomainError, type FieldError } from '#libs/errors';
import { type SessionEntity } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { elicitationResult } from '#libs/tools';
import { toolCallEntry } from '#libs/usage';
import { ItemsRepository } from '../tables/items.repository.js';
import { BUDGET_CALL_ID, parseWaitpoint } from './waitpoints.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { type TurnEntity, type Waitpoint, type WaitpointElicitation, type WaitpointResponse } from '../tables/turn.entities.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { ToolOutputItems } from '../steps/tool-output-items.js';
import { type Resumed, resumeAtWaitpoint } from './waitpoint-resume.js';
import { recordUsage } from '../steps/usage-writes.js';

export type { Resumed } from './waitpoint-resume.js';

/**
 * The clients' side of waitpoints: an answer or approval decisions resolve a question or approval
 * waitpoint, tool results (one per call) a client_tool one. A complete response is a committed
 * step of the turn, and the turn continues in a new run (resume_from_run_id) that any worker takes
 * over. Runs inside the caller's accepting transaction, after the session lock.
 */
@Injectable()
export class WaitpointControls {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly outputItems: ToolOutputItems,
    private readonly budgets: BudgetsRepository,
  ) {}

  /**
   * `trustForSession` false (a caller bound by a pinned agent's approval): `approve_session`
   * approves the call alone, the tool is not trusted for the rest of the session.
   */
  async resume(manager: EntityManager, session: SessionEntity, turnId: string, waitpointId: string, response: WaitpointResponse, options: { trustForSession?: boolean } = {}): Promise<Resumed> {
    const { turn, waitpoint } = await this.waitingTurn(manager, session, turnId, waitpointId);
    if (waitpoint.elicitation) return this.continueTurn(manager, turn, waitpoint, elicitationResponse(waitpoint, waitpoint.elicitation, response));
    if (waitpoint.kind === 'budget') return this.answerBudget(manager, session, turn, waitpoint, response);
    if (waitpoint.kind === 'client_tool' || (response.type === 'answer') !== (waitpoint.kind === 'question')) {
      const expected = waitpoint.kind === 'question' ? 'an answer' : waitpoint.kind === 'approval' ? 'approval decisions' : 'tool_result events';
      throw new DomainError('waitpoint_incomplete', `Waitpoint ${waitpoint.id} expects ${expected}`, { kind: waitpoint.kind });
    }
    checkCoverage(waitpoint, response);
    if (response.type === 'approval' && options.trustForSession !== false) {
      const trusted = response.decisions.filter((d) => d.decision === 'approve_session').map((d) => waitpoint.tool_calls?.find((c) => c.call_id === d.call_id)?.name ?? '');
      if (trusted.length > 0) await this.sessions.trustTools(manager, session.id, trusted);
    }
    return this.continueTurn(manager, turn, waitpoint, response);
  }

  /** One client tool result; the turn continues once every call of the waitpoint has one. */
  async toolResult(manager: EntityManager, session: SessionEntity, turnId: string, callId: string, outcome: { success: boolean; output: string }): Promise<Resumed> {
    const { turn, waitpoint } = await this.waitingTurn(manager, session, turnId, null);
    const call = waitpoint.kind === 'client_tool' ? waitpoint.tool_calls?.find((c) => c.call_id === callId) : undefined;
    if (!call) throw new DomainError('waitpoint_stale', `Turn ${turnId} does not wait for a result of call ${callId}`, { waitpoint_id: waitpoint.id });
    const at = new Date();
    const recorded = await this.steps.recordStep(manager, null, {
      runId: waitpoint.run_id,
      turnId: turn.id,
      sessionId: session.id,
      kind: 'tool_call',
      status: 'completed',
      ref: callId,
      input: { name: call.name, arguments: call.arguments },
      output: outcome,
      at,
    });
    if (!recorded) throw new DomainError('waitpoint_stale', `Call ${callId} already has a result`, { waitpoint_id: waitpoint.id });
    // A client tool call is one of the turn's tool calls, in the ledger with its result (once: a second result is stale).
    await recordUsage(manager, { sessionId: session.id, runId: waitpoint.run_id, turnId: turn.id }, [toolCallEntry('tool_call', call.name)]);
    const outputIndex = await this.items.countItems(manager, turn.id);
    const events = await this.outputItems.write(manager, { turn }, waitpoint.run_id, outputIndex, callId, outcome, at);
    const calls = waitpoint.tool_calls ?? [];
    const results = await this.steps.toolResults(manager, turn.id, calls.map((c) => c.call_id));
    if (results.size < calls.length) return { events, runId: null };
    const resumed = await this.continueTurn(manager, turn, waitpoint, { type: 'tool_results' });
    return { events: [...events, ...resumed.events], runId: resumed.runId };
  }

  /**
   * A budget waitpoint takes one approval decision (`call_id` "budget"). Approve goes on only when
   * every budget in scope has room again (the worker's gate checks once more before the call): else
   * 409 budget_exceeded and the turn still waits. Reject continues the turn only to fail it with
   * budget_exceeded (the worker settles it, as any failure).
   */
  private async answerBudget(manager: EntityManager, session: SessionEntity, turn: TurnEntity, waitpoint: Waitpoint, response: WaitpointResponse): Promise<Resumed> {
    if (response.type !== 'approval') throw new DomainError('waitpoint_incomplete', `Waitpoint ${waitpoint.id} expects approval decisions`, { kind: waitpoint.kind });
    checkCoverage(waitpoint, response);
    if (response.decisions[0]?.decision !== 'reject') {
      const budgets = await this.budgets.inScope(manager, session.id);
      const reached = firstBudgetWithoutRoom(budgets, await this.budgets.spent(manager, budgets, { turnId: turn.id }));
      if (reached) {
        throw new DomainError('budget_exceeded', `Budget ${reached.budget.id} still has no room: its ${reached.limit} limit is ${reached.limit_value}, ${reached.spent} spent`, {
          budget_id: reached.budget.id,
          limit: reached.limit,
          limit_value: reached.limit_value,
          spent: reached.spent,
        });
      }
    }
    return this.continueTurn(manager, turn, waitpoint, response);
  }

  private async waitingTurn(manager: EntityManager, session: SessionEntity, turnId: string, waitpointId: string | null): Promise<{ turn: TurnEntity; waitpoint: Waitpoint }> {
    const turn = await this.turns.findTurn(manager, turnId);
    if (!turn || turn.sessionId !== session.id) throw DomainError.notFound(`Turn ${turnId}`);
    // Read as the union by kind: a stored waitpoint of no kind's shape fails here, not halfway through a resume.
    const waitpoint = turn.status === 'requires_action' && turn.waitpoint ? parseWaitpoint(turn.waitpoint) : null;
    if (!waitpoint || (waitpointId !== null && waitpoint.id !== waitpointId)) {
      throw new DomainError('waitpoint_stale', `Turn ${turnId} does not wait at ${waitpointId ?? 'a waitpoint'} (it is ${turn.status}${waitpoint ? `, waiting at ${waitpoint.id}` : ''})`, {
        turn_status: turn.status,
        waitpoint_id: waitpoint?.id ?? null,
      });
    }
    return { turn, waitpoint };
  }

  private async continueTurn(manager: EntityManager, turn: TurnEntity, waitpoint: Waitpoint, response: WaitpointResponse): Promise<Resumed> {
    return resumeAtWaitpoint(manager, { steps: this.steps, turns: this.turns, sessions: this.sessions }, turn, waitpoint, response);
  }
}

/**
 * The answer to an MCP server's elicitation as the result the server gets: the action, and on
 * accept each field converted to its schema type. Fields the server does not require may be left
 * out; anything else wrong is 422 with the field named.
 */
function elicitationResponse(waitpoint: Waitpoint, elicitation: WaitpointElicitation, response: WaitpointResponse): WaitpointResponse {
  if (response.type !== 'answer') throw new DomainError('waitpoint_incomplete', `Waitpoint ${waitpoint.id} expects an answer`, { kind: waitpoint.kind });
  const ids = response.answers.map((a) => a.question_id);
  const repeated = ids.filter((id, index) => ids.indexOf(id) !== index);
  const converted = repeated.length > 0 ? { errors: [{ field: repeated[0]!, message: 'answered more than once' }] } : elicitationResult(elicitation, response.answers);
  if ('errors' in converted) {
    const fields: FieldError[] = converted.errors.map((e) => ({ field: `answers.${e.field}`, errors: [e.message] }));
    throw new DomainError('waitpoint_incomplete', `The response does not resolve waitpoint ${waitpoint.id}: ${converted.errors[0]!.field} ${converted.errors[0]!.message}`, { fields });
  }
  const { action, content } = converted.result;
  return { type: 'elicitation', call_id: elicitation.call_id, action, ...(content ? { content: content as Record<string, string | number | boolean | string[]> } : {}) };
}

/** The response must answer exactly the waitpoint's questions or decide exactly its calls: unknown ids are 409, gaps and repeats 422. */
function checkCoverage(waitpoint: Waitpoint, response: WaitpointResponse): void {
  const expected =
    waitpoint.kind === 'question' ? (waitpoint.questions ?? []).map((q) => q.question_id) : waitpoint.kind === 'budget' ? [BUDGET_CALL_ID] : (waitpoint.tool_calls ?? []).map((c) => c.call_id);
  const given = response.type === 'answer' ? response.answers.map((a) => a.question_id) : response.type === 'approval' ? response.decisions.map((d) => d.call_id) : [];
  const foreign = given.filter((id) => !expected.includes(id));
  if (foreign.length > 0) throw new DomainError('waitpoint_stale', `Not part of waitpoint ${waitpoint.id}: ${foreign.join(', ')}`, { unknown_ids: foreign });
  const problems: FieldError[] = [];
  const repeated = given.filter((id, index) => given.indexOf(id) !== index);
  if (repeated.length > 0) problems.push({ field: 'response', errors: [`answered more than once: ${[...new Set(repeated)].join(', ')}`] });
  const missing = expected.filter((id) => !given.includes(id));
  if (missing.length > 0) problems.push({ field: 'response', errors: [`missing: ${missing.join(', ')}`] });
  if (response.type === 'answer') {
    for (const answer of response.answers) {
      const question = waitpoint.questions?.find((q) => q.question_id === answer.question_id);
      if (!question) continue;
      const values = Array.isArray(answer.answer) ? answer.answer : [answer.answer];
      if (Array.isArray(answer.answer) && !question.multi_select) problems.push({ field: `answers.${answer.question_id}`, errors: ['takes a single answer (multi_select is false)'] });
      if (values.length === 0 || values.some((v) => v.trim() === '')) problems.push({ field: `answers.${answer.question_id}`, errors: ['must not be empty'] });
      if (question.options.length > 0 && !question.allow_other && values.some((v) => !question.options.includes(v))) {
        problems.push({ field: `answers.${answer.question_id}`, errors: [`must be one of the options: ${question.options.join(', ')}`] });
      }
    }
  }
  if (problems.length > 0) {
    throw new DomainError('waitpoint_incomplete', `The response does not resolve waitpoint ${waitpoint.id}: ${problems[0]?.errors[0]}`, { fields: problems });
  }
}
