import type { OutgoingEvent } from '#libs/events';
import { type ItemEntity, type RunEntity, type StoredContentPart, toItemDto, toRunDto, toTurnDto, type TurnEntity } from '#libs/turns';

/** Builders of the public SSE events of a turn, so every emitter projects the same way. */
export const turnEvents = {
  turn(type: 'created' | 'in_progress' | 'completed' | 'failed' | 'cancelled', turn: TurnEntity): OutgoingEvent {
    return { type: `agent.session.turn.${type}`, turn_id: turn.id, turn: toTurnDto(turn) };
  },
  run(type: 'created' | 'completed' | 'failed' | 'cancelled' | 'yielded' | 'interrupted', run: RunEntity): OutgoingEvent {
    return { type: `yuxi.session.run.${type}`, turn_id: run.turnId, run: toRunDto(run), yuxi: { run_id: run.id } };
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
