import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { metrics } from '#libs/metrics';
import { countSpend, type LedgerEntry, modelCallEntry } from '#libs/usage';
import type { OutgoingEvent } from '#libs/events';
import { SESSION_COLUMNS, sessionFromRow } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { turnFreedWrite } from '../claims/session-claims.js';
import { type Lease } from '../claims/lease.js';
import { ItemsRepository } from '../tables/items.repository.js';
import { ModelRequestsRepository } from '../tables/model-requests.repository.js';
import { type RunEntity } from '../tables/turn.entities.js';
import { toCurrentTurn } from '../views/projections.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { CooperationWaits } from '../cooperation/cooperation-waits.js';
import type { HeldTurn, Outcome, RunOutput, SettledTurn } from '../claims/held-turn.js';
import { lostDeltasNotice, RunOutputWriter, turnSeconds } from './run-output.js';
import { SessionTransactions, type SessionTx } from '../transaction/session-transaction.js';
import { turnEvents } from '../steps/turn-events.js';

/** A model call the run's end cut short (a cancel, a failure): a call all the same, in the ledger with the settle. */
function cutCallEntry(output: RunOutput): LedgerEntry | null {
  const cut = output.cutCall;
  return cut ? modelCallEntry('model_call', cut.model, cut.usage, { wallMs: cut.wallMs }) : null;
}

/**
 * How the worker that holds a run settles its turn's outcome (called by `RunClosing`, under the
 * lease it got from `TurnClaims` or a yield): one transaction under the session lock, fenced by
 * that lease (null when it is gone): one statement takes the lock and settles run and turn
 * (fenced), one more writes the session's overview, the output item and the events announcing it. The events
 * are published and the nudges sent once it commits (SessionTransactions).
 */
@Injectable()
export class TurnSettlement {
  constructor(
    private readonly transactions: SessionTransactions,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly config: AppConfig,
    private readonly writer: RunOutputWriter,
    private readonly cooperation: CooperationWaits,
    private readonly modelRequests: ModelRequestsRepository,
    private readonly items: ItemsRepository,
  ) {}

  /**
   * Commits the run's outcome: the model call as a step, the output item, run and turn, in one
   * transaction. A cancel accepted before this commit wins over completion (the client was told the
   * turn would stop); a failure stays a failure. Text already shown is kept: the final answer when
   * completed, an incomplete item otherwise. Null when the lease is gone.
   */
  async settle(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<SettledTurn | null> {
    const settled = await this.transactions.transaction(held.turn.sessionId, (tx) => this.settleIn(tx, held, lease, output, outcome));
    if (settled) {
      metrics.turnFinished(settled.status, turnSeconds(settled.turn));
      countSpend(settled.spent);
    }
    return settled;
  }

  private async settleIn(tx: SessionTx, held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<SettledTurn | null> {
    const { manager, sessionId } = tx;
    const now = new Date();
    const modelCall = outcome.status === 'completed' ? outcome.modelCall : undefined;
    // The answer's step id, chosen here (afresh on every attempt): its request and its ledger row are keyed by it.
    const answerId = modelCall ? newId() : undefined;
    const settled = await this.turns.settle(manager, {
      lease,
      runId: lease.runId,
      runStatus: outcome.status,
      turn: held.turn,
      error: outcome.status === 'failed' ? outcome.error : null,
      outputShown: output.item !== null,
      answer: modelCall ? { id: answerId, input: { model: modelCall.model }, output: { text: output.text, ...(modelCall.usage ? { usage: modelCall.usage } : {}), ...(modelCall.finishReason ? { finish_reason: modelCall.finishReason } : {}) } } : undefined,
      // The answer's model call is in the ledger with the settle (the same statement), reported usage or not.
      usage: modelCall && answerId ? modelCallEntry('model_call', modelCall.model, modelCall.usage, { stepId: answerId, wallMs: modelCall.wallMs }) : cutCallEntry(output),
      context: outcome.context ?? null,
      at: now,
      // The session lock is taken by the same statement, first.
      lockSession: SESSION_COLUMNS,
    });
    if (!settled?.session) return null;
    const session = sessionFromRow(settled.session);
    const { turn, runUsage, spent } = settled;
    // The answer is a step only when the turn completed (a cancel accepted first wins): its request with it.
    if (answerId && modelCall?.requestJson && turn.status === 'completed') await this.modelRequests.record(manager, answerId, modelCall.requestJson);
    // A failed turn pauses what waits behind it: the user decides whether the queue goes on.
    if (turn.status === 'failed' && session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
    const final = turn.status as Outcome['status'];
    const completed = final === 'completed';
    const events: OutgoingEvent[] = lostDeltasNotice(output);
    const writes = output.item !== null || (completed && !(outcome.status === 'completed' && outcome.withoutAnswer));
    // The account was at its cap of running turns: its sessions waiting for a slot may start.
    tx.write(turnFreedWrite(sessionId, toCurrentTurn(turn), writes ? 1 : 0, now, this.config.maxActiveTurnsPerOwner), ([row]) => {
      if (row?.crowded_account) tx.nudge({ kind: 'account', accountId: String(row.crowded_account) });
    });
    // A session with an environment: a command item still running when the turn ends (whatever its
    // outcome: a completed turn may race a command's own end) ends now, announced before the answer.
    // A session without one asks nothing here.
    if (held.config.environment) {
      for (const item of await this.items.endRunningCommands(manager, held.turn.id, `The turn was ${final} before this command ended; its outcome is unknown.`)) {
        events.push(turnEvents.item('done', item, item.content[0]?.command_execution?.output_index ?? 0));
      }
    }
    // Under the lock the session row is current: its item counter numbers the output item.
    if (writes) {
      const out = this.writer.finalOutputWrite(held, lease, output, completed ? 'completed' : 'incomplete', Number(session.itemSeq) + 1, now);
      events.push(...out.events);
      tx.write(out.write);
    }
    const run: RunEntity = { ...held.run, id: lease.runId, status: final, completedAt: now, error: turn.error, leaseOwner: null, leaseExpiresAt: null, usage: runUsage };
    events.push(turnEvents.run(final, run), turnEvents.turn(final, turn));
    // No queue nudge: the settling worker's driver looks for the session's next input itself. A
    // member's parent hears of it (and the tree's queued members, a slot freed).
    tx.nudge(...(await this.cooperation.memberTurnEnded(manager, session, turn)));
    tx.emit(events, { epoch: lease.epoch });
    return { turn, status: final, pendingInputs: session.pendingInputCount, spent };
  }
}
