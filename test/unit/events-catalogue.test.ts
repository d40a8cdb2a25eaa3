import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVENT_SCHEMA_NAMES, sessionEventSchemas } from '../../apps/api/src/openapi/session-events.js';
import { EVENT_TYPES, type EventType, type OutgoingEvent } from '#libs/events';
import { type AcceptedReceipt, EVENT_BUILDERS, type ItemEntity, type RunEntity, type TurnEntity, turnEvents, type Waitpoint } from '#libs/engine';

// The runtime side of the compile-time checks (libs/events/src/outgoing-events.ts,
// EVENT_BUILDERS, the OpenAPI specs): every type of the catalogue has one builder that builds it,
// and a schema that lists exactly the fields the builder sends.

const CATALOGUE = Object.keys(EVENT_TYPES).sort();
const at = new Date('2025-01-02T03:04:05Z');

const turn = {
  id: 'turn_1',
  sessionId: 'sess_1',
  seq: 1,
  status: 'in_progress',
  agentId: 'agent_1',
  model: 'scripted:echo',
  currentRunId: 'run_1',
  resultRunId: null,
  waitpoint: null,
  cancellationPending: true,
  error: null,
  usage: null,
  createdAt: at,
  startedAt: at,
  completedAt: null,
} as TurnEntity;

const run = {
  id: 'run_1',
  turnId: 'turn_1',
  sessionId: 'sess_1',
  seq: 1,
  status: 'in_progress',
  inputIds: ['input_1'],
  model: 'scripted:echo',
  config: {},
  resumeFromRunId: null,
  leaseOwner: 'worker',
  leaseExpiresAt: at,
  epoch: 1,
  checkpoint: null,
  createdAt: at,
  startedAt: at,
  completedAt: null,
  error: null,
  usage: null,
} as RunEntity;

const item = {
  id: 'item_1',
  sessionId: 'sess_1',
  turnId: 'turn_1',
  runId: 'run_1',
  inputId: null,
  seq: '1',
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text: 'hello' }],
  phase: 'final_answer',
  createdAt: at,
} as ItemEntity;

const waitpoint: Waitpoint = { id: 'wp_1', kind: 'question', run_id: 'run_1', created_at: 1 };
const receipt: AcceptedReceipt = {
  object: 'yuxi.session.event.accepted',
  event_id: 'evt_1',
  session_id: 'sess_1',
  input_id: 'input_1',
  turn_id: null,
  run_id: null,
  status: 'accepted',
};
const part = { type: 'output_text', text: 'hello' };
const compaction = {
  ...item,
  id: 'item_2',
  type: 'compaction',
  role: null,
  phase: null,
  content: [
    {
      type: 'compaction',
      text: 'Goal: …',
      compaction: { trigger: 'auto', through_item_id: 'item_0', first_kept_item_id: 'item_1', tokens_before: 900, tokens_after: 300, model: 'scripted:echo', usage: null },
    },
  ],
} as ItemEntity;

/** The arguments of each builder: typed per type, so a new type without a sample does not compile either. */
const SAMPLES: { [K in EventType]: Parameters<(typeof EVENT_BUILDERS)[K]> } = {
  'agent.session.created': [{ id: 'sess_1' }],
  'yuxi.session.event.accepted': [receipt],
  'yuxi.session.run.created': [run],
  'agent.session.turn.created': [turn],
  'agent.session.turn.in_progress': [turn],
  'yuxi.session.turn.capability_limited': ['turn_1', 'run_1', 'tool_source_unavailable'],
  'yuxi.session.budget.reached': ['turn_1', 'run_1', { budgetId: 'budget_1', scope: { kind: 'project', id: 'proj' }, limit: 'model_calls', limitValue: 2, spent: 2, onExceeded: 'pause' }],
  'agent.session.turn.item.added': [item, 0],
  'agent.session.turn.content_part.added': [item, 0, 0, part],
  'agent.session.turn.output_text.delta': [item, 0, 0, 'hel'],
  'yuxi.session.turn.reasoning.delta': [item, 0, 'thinking'],
  'yuxi.session.turn.reasoning.done': [item, 0, 'thinking done'],
  'yuxi.session.turn.tool_progress': ['turn_1', 'run_1', 'call_1', { progress: 2, total: 4 }],
  'agent.output.command_execution_output.delta': [{ turnId: 'turn_1', itemId: 'item_3', outputIndex: 1 }, 'run_1', 'hi\n'],
  'agent.session.turn.output_text.done': [item, 0, 0, 'hello'],
  'agent.session.turn.content_part.done': [item, 0, 0, part],
  'agent.session.turn.item.done': [item, 0],
  'yuxi.session.turn.context_compression': ['completed', { turnId: 'turn_1', runId: 'run_1', trigger: 'auto' }, { item: compaction, outputIndex: 2 }],
  'agent.session.subagent.created': [
    'turn_1',
    'run_1',
    { id: '0190a5c4-0000-5000-8000-000000000001', agent_id: 'coordinator', name: 'a', task: 'alpha', parent_session_id: '0190a5c4-0000-7000-8000-000000000002', root_session_id: '0190a5c4-0000-7000-8000-000000000002', depth: 1 },
  ],
  'yuxi.session.subagent.state': [{ memberSessionId: '0190a5c4-0000-5000-8000-000000000001', name: 'a', turnId: 'turn_2', status: 'completed', errorCode: null }],
  'yuxi.session.run.yielded': [run],
  'yuxi.session.run.interrupted': [run],
  'yuxi.session.run.requires_action': [run],
  'yuxi.session.turn.waiting': [turn, waitpoint],
  'yuxi.session.run.completed': [run],
  'yuxi.session.run.failed': [run],
  'yuxi.session.run.cancelled': [run],
  'yuxi.session.turn.state': [turn],
  'agent.session.turn.completed': [turn],
  'agent.session.turn.failed': [turn],
  'agent.session.turn.cancelled': [turn],
  'yuxi.session.resync': ['events_lost'],
};

function build(type: EventType): OutgoingEvent {
  // Each builder takes its own arguments; SAMPLES pairs them by type.
  const builder = EVENT_BUILDERS[type] as (...args: unknown[]) => OutgoingEvent;
  return builder(...(SAMPLES[type] as unknown[]));
}

interface MemberSchema {
  required: string[];
  properties: Record<string, { enum?: unknown[]; required?: string[] }>;
}

const schemas = sessionEventSchemas() as Record<string, unknown>;
const member = (type: EventType) => schemas[EVENT_SCHEMA_NAMES[type]] as MemberSchema;
/** Fields the envelope adds (stampEvents, the outbox) rather than the builder. */
const ENVELOPE = new Set(['event_id', 'session_id', 'created_at']);

describe('event catalogue', () => {
  it('has one builder per type of EVENT_TYPES, and no other', () => {
    assert.deepEqual(Object.keys(EVENT_BUILDERS).sort(), CATALOGUE);
  });

  it('builds, with each builder, an event of its own type', () => {
    for (const type of CATALOGUE as EventType[]) {
      const event = build(type);
      assert.equal(event.type, type);
      assert.ok(Object.hasOwn(EVENT_TYPES, event.type), `${event.type} is not in EVENT_TYPES`);
    }
  });

  it('builds only catalogued types through turnEvents, the emitters\' entry point', () => {
    const built: OutgoingEvent[] = [
      turnEvents.sessionCreated({ id: 'sess_1' }),
      turnEvents.accepted(receipt),
      ...(['created', 'in_progress', 'completed', 'failed', 'cancelled'] as const).map((status) => turnEvents.turn(status, turn)),
      turnEvents.turnState(turn),
      ...(['created', 'requires_action', 'completed', 'failed', 'cancelled', 'yielded', 'interrupted'] as const).map((status) => turnEvents.run(status, run)),
      turnEvents.waiting(turn, waitpoint),
      turnEvents.capabilityLimited(...SAMPLES['yuxi.session.turn.capability_limited']),
      turnEvents.budgetReached(...SAMPLES['yuxi.session.budget.reached']),
      turnEvents.reasoningDelta(item, 0, 'x'),
      turnEvents.reasoningDone(item, 0, 'x'),
      turnEvents.toolProgress(...SAMPLES['yuxi.session.turn.tool_progress']),
      turnEvents.commandOutput(...SAMPLES['agent.output.command_execution_output.delta']),
      ...(['added', 'done'] as const).flatMap((phase) => [turnEvents.item(phase, item, 0), turnEvents.contentPart(phase, item, 0, 0, part)]),
      turnEvents.textDelta(item, 0, 0, 'x'),
      turnEvents.textDone(item, 0, 0, 'x'),
      turnEvents.resync('events_lost'),
      turnEvents.contextCompression('started', { turnId: 'turn_1', runId: 'run_1', trigger: 'manual' }),
      turnEvents.subagentCreated(...SAMPLES['agent.session.subagent.created']),
      turnEvents.subagentState(...SAMPLES['yuxi.session.subagent.state']),
    ];
    for (const event of built) assert.ok(Object.hasOwn(EVENT_TYPES, event.type), `${event.type} is not in EVENT_TYPES`);
    // Between them, the entry points reach every type.
    assert.deepEqual([...new Set(built.map((event) => event.type))].sort(), CATALOGUE);
  });

  it('has an OpenAPI schema per type, and a SessionEvent member per type', () => {
    assert.deepEqual(Object.keys(EVENT_SCHEMA_NAMES).sort(), CATALOGUE);
    const union = schemas.SessionEvent as { oneOf: unknown[]; discriminator: { mapping: Record<string, string> } };
    assert.deepEqual(Object.keys(union.discriminator.mapping).sort(), CATALOGUE);
    assert.equal(union.oneOf.length, CATALOGUE.length);
    for (const type of CATALOGUE as EventType[]) {
      assert.ok(member(type), `no schema ${EVENT_SCHEMA_NAMES[type]} for ${type}`);
      assert.deepEqual(member(type).properties.type?.enum, [type]);
    }
  });

  it('sends, from each builder, exactly the fields its schema lists (the schemas are closed)', () => {
    for (const type of CATALOGUE as EventType[]) {
      const event = build(type) as unknown as Record<string, unknown>;
      const schema = member(type);
      const declared = Object.keys(schema.properties).filter((field) => !ENVELOPE.has(field));
      const sent = Object.keys(event);
      // `yuxi` is always there once stamped; the builder adds it only when it has something to say.
      // Optional fields (not in `required`) may be absent from a sample; nothing undeclared may be sent.
      const present = declared.filter((field) => field !== 'yuxi' && (field in event || schema.required.includes(field)));
      assert.deepEqual(sent.filter((field) => field !== 'yuxi').sort(), present.sort(), type);
      for (const field of schema.required) if (!ENVELOPE.has(field) && field !== 'yuxi') assert.ok(field in event, `${type}: ${field} is required`);
      const runRequired = schema.properties.yuxi?.required?.includes('run_id') ?? false;
      const yuxi = event.yuxi as { run_id?: unknown } | undefined;
      assert.equal(yuxi !== undefined && 'run_id' in yuxi, runRequired, `${type}: yuxi.run_id`);
    }
  });
});
