import type { OutgoingEvent } from '#libs/events';
import { type ItemEntity, type RunEntity, type StoredContentPart, toItemDto, toRunDto, toTurnDto, type TurnEntity, type Waitpoint } from '#libs/turns';

/** Builders of the public SSE events of a turn, so every emitter projects the same way. */
export const turnEvents = {
  turn(type: 'created' | 'in_progress' | 'completed' | 'failed' | 'cancelled', turn: TurnEntity): OutgoingEvent {
    return { type: `agent.session.turn.${type}`, turn_id: turn.id, turn: toTurnDto(turn) };
  },
  run(type: 'created' | 'requires_action' | 'completed' | 'failed' | 'cancelled' | 'yielded' | 'interrupted', run: RunEntity): OutgoingEvent {
    return { type: `yuxi.session.run.${type}`, turn_id: run.turnId, run: toRunDto(run), yuxi: { run_id: run.id } };
  },
  /** The turn stopped at a waitpoint: what it waits for, bound to the turn and the run that asked. */
  waiting(turn: TurnEntity, waitpoint: Waitpoint): OutgoingEvent {
    return { type: 'yuxi.session.turn.waiting', turn_id: turn.id, waitpoint, turn: toTurnDto(turn), yuxi: { run_id: waitpoint.run_id } };
  },
  reasoningDelta(item: ItemEntity, outputIndex: number, delta: string): OutgoingEvent {
    return { type: 'yuxi.session.turn.reasoning.delta', turn_id: item.turnId, item_id: item.id, output_index: outputIndex, delta, yuxi: { run_id: item.runId } };
  },
  reasoningDone(item: ItemEntity, outputIndex: number, text: string): OutgoingEvent {
    return { type: 'yuxi.session.turn.reasoning.done', turn_id: item.turnId, item_id: item.id, output_index: outputIndex, text, yuxi: { run_id: item.runId } };
  },
  item(type: 'added' | 'done', item: ItemEntity, outputIndex: number): OutgoingEvent {
    return {
      type: `agent.session.turn.item.${type}`,
      turn_id: item.turnId,
      output_index: outputIndex,
      item: toItemDto(item),
      yuxi: { run_id: item.runId },
    };
  },
  contentPart(type: 'added' | 'done', item: ItemEntity, outputIndex: number, contentIndex: number, part: StoredContentPart): OutgoingEvent {
    return {
      type: `agent.session.turn.content_part.${type}`,
      turn_id: item.turnId,
      item_id: item.id,
      output_index: outputIndex,
      content_index: contentIndex,
      part: { ...part, annotations: [] },
      yuxi: { run_id: item.runId },
    };
  },
  textDelta(item: ItemEntity, outputIndex: number, contentIndex: number, delta: string): OutgoingEvent {
    return {
      type: 'agent.session.turn.output_text.delta',
      turn_id: item.turnId,
      item_id: item.id,
      output_index: outputIndex,
      content_index: contentIndex,
      delta,
      yuxi: { run_id: item.runId },
    };
  },
  textDone(item: ItemEntity, outputIndex: number, contentIndex: number, text: string): OutgoingEvent {
    return {
      type: 'agent.session.turn.output_text.done',
      turn_id: item.turnId,
      item_id: item.id,
      output_index: outputIndex,
      content_index: contentIndex,
      text,
      yuxi: { run_id: item.runId },
    };
  },
};
