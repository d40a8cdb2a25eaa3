import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { OutgoingEvent } from '#libs/events';
import { ItemsRepository, type NewItem } from '../tables/items.repository.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import type { ItemEntity } from '../tables/turn.entities.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { type CommandEnding, commandItemId } from './command-items.js';
import { turnEvents } from './turn-events.js';

/**
 * The function_call_output item of a call (and the end of a command's item), written in its caller's transaction: by the worker for
 * a server call's result and a coordinator's call on its members, and by the api for a client's
 * tool_result. One writer, so every call's output takes the same item sequence and events.
 */
@Injectable()
export class ToolOutputItems {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly items: ItemsRepository,
  ) {}

  /** The item (its seq reserved on the session) and its added and done events at `outputIndex`. */
  async write(
    manager: EntityManager,
    held: Pick<HeldTurn, 'turn'>,
    runId: string,
    outputIndex: number,
    callId: string,
    outcome: { success: boolean; output: string },
    at: Date,
    tokens: number | null = null,
    fileIds: string[] = [],
  ): Promise<OutgoingEvent[]> {
    const seq = await this.sessions.reserveItemSeqs(manager, held.turn.sessionId, 1);
    const [item] = await this.items.insertItems(manager, seq, [{ ...toolItem(held, runId, 'function_call_output', outputPart(callId, outcome, fileIds), at), tokens }]);
    return [turnEvents.item('added', item!, outputIndex), turnEvents.item('done', item!, outputIndex)];
  }

  /**
   * Ends a call's command_execution item (written in progress with the call) and announces it done
   * at its own output index; nothing when it already ended.
   */
  async endCommand(manager: EntityManager, held: Pick<HeldTurn, 'turn'>, callId: string, ending: CommandEnding): Promise<OutgoingEvent[]> {
    const { status, ...fields } = ending;
    const item = await this.items.endCommand(manager, commandItemId(held.turn.id, callId), status, fields);
    return item ? [turnEvents.item('done', item, item.content[0]?.command_execution?.output_index ?? 0)] : [];
  }
}

/** The content of a call's output item (with the staged files it shows, when any). */
export function outputPart(callId: string, outcome: { success: boolean; output: string }, fileIds: string[] = []): ItemEntity['content'][number] {
  const part: ItemEntity['content'][number] = { type: 'function_call_output', call_id: callId, output: outcome.output, success: outcome.success };
  if (fileIds.length > 0) part.file_ids = fileIds;
  return part;
}

/** An item of a call or of its output: one content part, completed, in the turn's run. */
export function toolItem(held: Pick<HeldTurn, 'turn'>, runId: string, type: string, part: ItemEntity['content'][number], at: Date): NewItem {
  return { sessionId: held.turn.sessionId, turnId: held.turn.id, runId, inputId: null, type, role: null, status: 'completed', content: [part], phase: null, createdAt: at };
}
