import { type ContentObject, getSchemaPath, type SchemaObject } from '@nestjs/swagger';
import { type ContentPartEventType, EVENT_FORMAT, EVENT_TYPES, type EventOf, type EventType, type ItemEventType, type RunEventType, type TurnStatusEventType } from '#libs/events';
import { BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_SCOPE_KINDS } from '#libs/budgets';
import { SessionDto, ReceiptDto } from '#libs/protocol';
import { COMPACTION_TRIGGERS, ContentPartDto, ItemDto, PublicErrorDto, RunDto, TurnDto, TurnStateDto, WaitpointDto } from '#libs/engine';

/**
 * The SSE payloads as schemas: one per event type, combined as `SessionEvent` (a `oneOf` with a
 * discriminator on `type`), so a generated client narrows `event.type` to a typed payload. Each
 * shape mirrors what its builder sends (EVENT_BUILDERS in libs/engine/src/steps/turn-events.ts) and is
 * closed: a field the server adds must be added here, and the compiler says so (see SpecOf).
 */

/**
 * Where an event lives: durable events are written to the outbox and carry `yuxi.seq`; live ones
 * (deltas, and the announcement of a streaming assistant message) never do; some types are either.
 */
type Durability = 'durable' | 'live' | 'either';

interface EventSpec {
  /** The component name of the member schema. */
  name: string;
  durability: Durability;
  /** `yuxi.run_id`: required (the run the event belongs to), absent, or required and possibly null (items written outside a run). */
  run: 'required' | 'nullable' | 'none';
  /** Whether the event names its turn (`turn_id`). */
  turn: boolean;
  /** The type-specific fields, required unless named in `optional`. */
  payload: Record<string, SchemaObject>;
  optional?: string[];
  /** The event embeds an item's content, cut past EVENT_ITEM_CONTENT_BYTES (`yuxi.truncated`). */
  truncates?: boolean;
}

/** The fields of an event type's shape (libs/events) that its spec's `payload` lists: all but the envelope's. */
type PayloadField<K extends EventType> = Exclude<keyof EventOf<K>, 'type' | 'turn_id' | 'yuxi'>;

/**
 * The spec of event type K, held to K's shape in libs/events: `payload` names exactly its fields
 * (a missing one or an extra one is a compile error) and `turn` is true exactly when it has turn_id.
 */
type SpecOf<K extends EventType> = Omit<EventSpec, 'turn' | 'payload'> & {
  turn: 'turn_id' extends keyof EventOf<K> ? true : false;
  payload: Record<PayloadField<K>, SchemaObject>;
};

const ref = (model: Parameters<typeof getSchemaPath>[0]): SchemaObject => ({ $ref: getSchemaPath(model) }) as SchemaObject;
const index = (description: string): SchemaObject => ({ type: 'integer', minimum: 0, description });
const OUTPUT_INDEX = index('Position of the item among the outputs of the turn; merge deltas by item_id, output_index and content_index.');
const REASONING_INDEX = index('Position of the reasoning block in the item\'s `yuxi.reasoning` (always 0 today: one block per assistant message); compare with `yuxi.completed_reasoning_indices`.');
const CONTENT_INDEX = index('Position of the content part in the item (always 0 today: one output_text part per assistant message).');
const ITEM_ID: SchemaObject = { type: 'string', description: 'The assistant message the event belongs to (`item.id`).' };
const text = (description: string): SchemaObject => ({ type: 'string', description });

const turnEvent = (name: string): SpecOf<TurnStatusEventType> => ({ name, durability: 'durable', run: 'none', turn: true, payload: { turn: ref(TurnDto) } });
const runEvent = (name: string): SpecOf<RunEventType> => ({ name, durability: 'durable', run: 'required', turn: true, payload: { run: ref(RunDto) } });
const itemEvent = (name: string, durability: Durability): SpecOf<ItemEventType> => ({
  name,
  durability,
  run: 'nullable',
  turn: true,
  truncates: true,
  payload: { output_index: OUTPUT_INDEX, item: ref(ItemDto) },
});
const partEvent = (name: string, durability: Durability): SpecOf<ContentPartEventType> => ({
  name,
  durability,
  run: 'required',
  turn: true,
  truncates: true,
  payload: { item_id: ITEM_ID, output_index: OUTPUT_INDEX, content_index: CONTENT_INDEX, part: ref(ContentPartDto) },
});

/** Every type of EVENT_TYPES has its spec, true to its shape (the compiler checks that none is missing or stale). */
const EVENT_SPECS: { [K in EventType]: SpecOf<K> } = {
  'agent.session.created': { name: 'SessionCreatedEvent', durability: 'durable', run: 'none', turn: false, payload: { session: ref(SessionDto) } },
  'yuxi.session.event.accepted': { name: 'InputAcceptedEvent', durability: 'durable', run: 'none', turn: false, payload: { receipt: ref(ReceiptDto) } },
  'yuxi.session.run.created': runEvent('RunCreatedEvent'),
  'agent.session.turn.created': turnEvent('TurnCreatedEvent'),
  'agent.session.turn.in_progress': turnEvent('TurnInProgressEvent'),
  'yuxi.session.turn.capability_limited': {
    name: 'TurnCapabilityLimitedEvent',
    durability: 'durable',
    run: 'required',
    turn: true,
    payload: {
      reason: { type: 'string', enum: ['tool_source_unavailable'], description: '`tool_source_unavailable`: a tool source (an MCP server) could not be reached; the turn goes on without its tools.' },
      message: { type: 'string', description: 'A generic notice for the person; it names no source, tool or address.', example: 'Some tools are unavailable for this turn; it continues without them.' },
    },
  },
  'agent.session.turn.item.added': itemEvent('TurnItemAddedEvent', 'either'),
  'agent.session.turn.content_part.added': partEvent('TurnContentPartAddedEvent', 'live'),
  'agent.session.turn.output_text.delta': {
    name: 'TurnOutputTextDeltaEvent',
    durability: 'live',
    run: 'required',
    turn: true,
    payload: { item_id: ITEM_ID, output_index: OUTPUT_INDEX, content_index: CONTENT_INDEX, delta: text('The text appended to the content part.') },
  },
  'yuxi.session.turn.reasoning.delta': {
    name: 'TurnReasoningDeltaEvent',
    durability: 'live',
    run: 'required',
    turn: true,
    payload: { item_id: ITEM_ID, output_index: OUTPUT_INDEX, reasoning_index: REASONING_INDEX, delta: text('Reasoning text the model streamed.') },
  },
  'yuxi.session.turn.reasoning.done': {
    name: 'TurnReasoningDoneEvent',
    durability: 'live',
    run: 'required',
    turn: true,
    truncates: true,
    payload: {
      item_id: ITEM_ID,
      output_index: OUTPUT_INDEX,
      reasoning_index: REASONING_INDEX,
      text: text('The full reasoning text of the model call, saved in the item\'s `yuxi.reasoning` before this is sent (cut past EVENT_ITEM_CONTENT_BYTES, see `yuxi.truncated`).'),
    },
  },
  'yuxi.session.turn.tool_progress': {
    name: 'TurnToolProgressEvent',
    durability: 'live',
    run: 'required',
    turn: true,
    payload: {
      call_id: text('The call in flight: its `function_call` item and its `function_call_output` carry the same `call_id`.'),
      progress: { type: 'number', description: 'How far the call is, in the server\'s units; grows with each report of the call.' },
      total: { type: 'number', nullable: true, description: 'The progress at which the call is done, when the server knows it; null otherwise.' },
      message: { type: 'string', nullable: true, description: 'What the server says it is doing, when it says; null otherwise.' },
    },
  },
  'agent.output.command_execution_output.delta': {
    name: 'CommandExecutionOutputDeltaEvent',
    durability: 'live',
    run: 'required',
    turn: true,
    payload: {
      item_id: text('The `command_execution` item of the command (its `id`).'),
      output_index: index('Position of the command_execution item among the outputs of the turn.'),
      delta: text('Output the command wrote (stdout and stderr together, in order).'),
    },
  },
  'agent.session.turn.output_text.done': {
    name: 'TurnOutputTextDoneEvent',
    durability: 'durable',
    run: 'required',
    turn: true,
    truncates: true,
    payload: {
      item_id: ITEM_ID,
      output_index: OUTPUT_INDEX,
      content_index: CONTENT_INDEX,
      text: text('The full committed text (cut past EVENT_ITEM_CONTENT_BYTES, see `yuxi.truncated`); replaces the accumulated deltas.'),
    },
  },
  'agent.session.turn.content_part.done': partEvent('TurnContentPartDoneEvent', 'durable'),
  'agent.session.turn.item.done': itemEvent('TurnItemDoneEvent', 'durable'),
  'yuxi.session.run.yielded': runEvent('RunYieldedEvent'),
  'yuxi.session.run.interrupted': runEvent('RunInterruptedEvent'),
  'yuxi.session.run.requires_action': runEvent('RunRequiresActionEvent'),
  'yuxi.session.turn.waiting': {
    name: 'TurnWaitingEvent',
    durability: 'durable',
    run: 'required',
    turn: true,
    payload: { waitpoint: ref(WaitpointDto), turn: ref(TurnDto) },
  },
  'yuxi.session.turn.context_compression': {
    name: 'TurnContextCompressionEvent',
    durability: 'either',
    run: 'required',
    turn: true,
    optional: ['output_index', 'item', 'error'],
    payload: {
      phase: { type: 'string', enum: ['started', 'completed', 'failed'], description: '`started` is live; `completed` is durable; `failed` is durable when nothing was compacted, live when the summariser failed.' },
      trigger: { type: 'string', enum: [...COMPACTION_TRIGGERS] },
      output_index: index('completed: the compaction item\'s position among the outputs of the turn.'),
      item: ref(ItemDto),
      error: ref(PublicErrorDto),
    },
  },
  'agent.session.subagent.created': {
    name: 'SubagentCreatedEvent',
    durability: 'durable',
    run: 'required',
    turn: true,
    payload: {
      subagent: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'agent_id', 'name', 'task', 'parent_session_id', 'root_session_id', 'depth'],
        properties: {
          id: { type: 'string', format: 'uuid', description: 'The member\'s session id (derived from the spawning call).' },
          agent_id: { type: 'string' },
          name: { type: 'string' },
          task: { type: 'string' },
          parent_session_id: { type: 'string', format: 'uuid' },
          root_session_id: { type: 'string', format: 'uuid' },
          depth: { type: 'integer', minimum: 1 },
        },
      },
    },
  },
  'yuxi.session.subagent.state': {
    name: 'SubagentStateEvent',
    durability: 'durable',
    run: 'none',
    turn: true,
    payload: {
      subagent_id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      status: { type: 'string', enum: ['completed', 'failed', 'cancelled'] },
      error_code: { type: 'string', nullable: true },
    },
  },
  'yuxi.session.budget.reached': {
    name: 'BudgetReachedEvent',
    durability: 'durable',
    run: 'required',
    turn: true,
    payload: {
      budget_id: text('The budget without room.'),
      scope: {
        type: 'object',
        required: ['kind', 'id'],
        additionalProperties: false,
        properties: { kind: { type: 'string', enum: [...BUDGET_SCOPE_KINDS] }, id: text('The session, project, app, end user, agent or user the budget covers.') },
      },
      limit: { type: 'string', enum: [...BUDGET_LIMIT_KEYS], description: 'The limit key reached.' },
      limit_value: { type: 'integer', minimum: 0, description: 'The limit\'s value.' },
      spent: { type: 'integer', minimum: 0, description: 'What the scope has spent of it in the budget\'s period, plus what calls in flight hold.' },
      on_exceeded: { type: 'string', enum: [...BUDGET_ON_EXCEEDED], description: '`pause`: the turn waits at a `budget` waitpoint; `fail`: the turn fails with `budget_exceeded`.' },
    },
  },
  'yuxi.session.run.completed': runEvent('RunCompletedEvent'),
  'yuxi.session.run.failed': runEvent('RunFailedEvent'),
  'yuxi.session.run.cancelled': runEvent('RunCancelledEvent'),
  'yuxi.session.turn.state': { name: 'TurnStateEvent', durability: 'durable', run: 'none', turn: true, payload: { turn: ref(TurnStateDto) } },
  'agent.session.turn.completed': turnEvent('TurnCompletedEvent'),
  'agent.session.turn.failed': turnEvent('TurnFailedEvent'),
  'agent.session.turn.cancelled': turnEvent('TurnCancelledEvent'),
  'yuxi.session.resync': {
    name: 'ResyncEvent',
    durability: 'either',
    run: 'none',
    turn: false,
    payload: {
      reason: {
        type: 'string',
        enum: ['cursor_expired', 'events_lost'],
        description: '`cursor_expired`: the Last-Event-ID cursor is older than the replay window; `events_lost`: durable events or deltas were lost on the way.',
      },
    },
  },
};

const SEQ: SchemaObject = {
  type: 'integer',
  minimum: 1,
  description: 'Durable events: 1, 2, 3… per session without gaps. A jump means events were missed (the server sends yuxi.session.resync first).',
};
const FORMAT: SchemaObject = {
  type: 'integer',
  enum: [EVENT_FORMAT],
  description:
    'The format of the event (its envelope and meaning), the same in every event of a stream (and in a replay of it). A stream never mixes formats; a client that does not know this value must not apply the event. The `id:` cursors of the stream have one format too: a cursor of an earlier format is refused (400 `last_event_id_retired`).',
};
const TRUNCATED: SchemaObject = {
  type: 'boolean',
  enum: [true],
  description:
    'Present (true) when the item content this event embeds was cut: its texts together are at most EVENT_ITEM_CONTENT_BYTES (UTF-8) in an event. The item itself is whole: read it from `GET /api/v1/agents/sessions/{session_id}/items`.',
};
const RUN_ID: SchemaObject = { type: 'string', description: 'The run (execution segment) the event belongs to.' };

function yuxiSchema(spec: EventSpec): SchemaObject {
  const properties: Record<string, SchemaObject> = { format: FORMAT };
  const required: string[] = ['format'];
  if (spec.durability !== 'live') properties.seq = SEQ;
  if (spec.durability === 'durable') required.push('seq');
  if (spec.run !== 'none') {
    properties.run_id = spec.run === 'nullable' ? { ...RUN_ID, nullable: true, description: `${RUN_ID.description} Null for an item written outside a run.` } : RUN_ID;
    required.push('run_id');
  }
  if (spec.truncates) properties.truncated = TRUNCATED;
  const where = { durable: 'Durable: carries `seq`.', live: 'Live only: no `seq`.', either: '`seq` present when the event is durable.' }[spec.durability];
  return { type: 'object', description: `Extensions. ${where}`, properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

function memberSchema(type: EventType, spec: EventSpec): SchemaObject {
  const properties: Record<string, SchemaObject> = {
    type: { type: 'string', enum: [type] },
    event_id: { type: 'string', description: 'Stable id of the event (the same on every replay).', example: 'evt_0190f3c2a1b87c4d9e2f3a4b5c6d7e8f' },
    session_id: { type: 'string' },
    created_at: { type: 'integer', description: 'Unix seconds.' },
    ...(spec.turn ? { turn_id: { type: 'string', description: 'The turn the event belongs to.' } } : {}),
    ...spec.payload,
    yuxi: yuxiSchema(spec),
  };
  const required = ['type', 'event_id', 'session_id', 'created_at', ...(spec.turn ? ['turn_id'] : []), ...Object.keys(spec.payload).filter((field) => !spec.optional?.includes(field)), 'yuxi'];
  return { type: 'object', description: EVENT_TYPES[type], required, properties, additionalProperties: false };
}

const ENTRIES = Object.entries(EVENT_SPECS) as [EventType, EventSpec][];

/** Component schemas: one per event type and the `SessionEvent` union. */
export function sessionEventSchemas(): Record<string, SchemaObject> {
  const schemas: Record<string, SchemaObject> = {};
  for (const [type, spec] of ENTRIES) schemas[spec.name] = memberSchema(type, spec);
  schemas.SessionEvent = {
    description: 'The JSON `data:` of one session stream message; `type` (the same as the SSE `event:`) tells which.',
    oneOf: ENTRIES.map(([, spec]) => ({ $ref: `#/components/schemas/${spec.name}` })),
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(ENTRIES.map(([type, spec]) => [type, `#/components/schemas/${spec.name}`])) },
  };
  return schemas;
}

/** The component name of each event type's schema. */
export const EVENT_SCHEMA_NAMES: Record<EventType, string> = Object.fromEntries(ENTRIES.map(([type, spec]) => [type, spec.name])) as Record<EventType, string>;

/**
 * The `text/event-stream` content of both stream responses. OpenAPI 3.0 has no way to type the
 * messages of a stream (3.2's `itemSchema`), so the schema of the media type is the one thing each
 * message carries, the `SessionEvent` of its `data:` — the convention of streaming APIs' own
 * documents (OpenAI's among them), read by linters, Swagger UI and generators alike; the framing
 * (`id:`, `event:`, heartbeats) is in the response's description. Our SDK's generator types the raw
 * body as text (scripts/sdk-generate.mjs).
 */
export function sseContent(): ContentObject {
  return { 'text/event-stream': { schema: { $ref: '#/components/schemas/SessionEvent' } } };
}

/** The framing of a stream message, said in each stream response's description. */
export const SSE_FRAMING =
  'Each message: `id:` (an opaque cursor for Last-Event-ID), `event:` (the type) and `data:` (one SessionEvent as JSON, the schema of this media type). Comment lines (`: ping`) are heartbeats.';
