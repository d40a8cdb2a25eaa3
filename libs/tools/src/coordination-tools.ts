import type { ResolvedTool } from './tool.types.js';

/**
 * The tools a coordinator gets when its agent enables `multi_agent` (README "Cooperation:
 * subagents and trees"), without declaring them. They are not executed here: create, message and
 * interrupt are committed steps of the coordinator's turn that change other sessions (executor
 * `coordinator`); a wait suspends the turn until members settle (executor `cooperation`).
 */
export const COORDINATION_TOOL_NAMES = ['create_subagent', 'message_subagent', 'wait_subagents', 'interrupt_subagent'] as const;
export type CoordinationToolName = (typeof COORDINATION_TOOL_NAMES)[number];

/** The item type of a coordination call (`create_subagent_call`, …); its result is a function_call_output. */
export function coordinationItemType(name: CoordinationToolName): `${CoordinationToolName}_call` {
  return `${name}_call`;
}

export function isCoordinationTool(name: string): name is CoordinationToolName {
  return (COORDINATION_TOOL_NAMES as readonly string[]).includes(name);
}

const SUBAGENT_ID = { type: 'string', minLength: 1, maxLength: 128, description: 'The member: its session id, or the name it was created with.' };

const TOOLS: readonly ResolvedTool[] = [
  {
    name: 'create_subagent',
    description:
      'Start a subagent (a member of your team) on a task. It works in its own session, in parallel with you, on the shared workdir; ' +
      'call wait_subagents to get its answer. Give it a short unique name to address it later.',
    parameters: {
      type: 'object',
      properties: {
        task: { type: 'string', minLength: 1, maxLength: 100_000, description: 'What the subagent should do: its first message.' },
        agent_id: { type: 'string', minLength: 1, maxLength: 64, description: 'The agent to run it with (default: your own).' },
        name: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9 _.-]*$', description: 'A short name, unique among your subagents.' },
      },
      required: ['task'],
      additionalProperties: false,
    },
    executor: 'coordinator',
    requiresApproval: false,
    idempotent: true,
    sideEffects: true,
    source: 'coordination',
  },
  {
    name: 'message_subagent',
    description: 'Send a subagent a further message; it queues after what the subagent is doing.',
    parameters: {
      type: 'object',
      properties: { subagent_id: SUBAGENT_ID, message: { type: 'string', minLength: 1, maxLength: 100_000 } },
      required: ['subagent_id', 'message'],
      additionalProperties: false,
    },
    executor: 'coordinator',
    requiresApproval: false,
    idempotent: true,
    sideEffects: true,
    source: 'coordination',
  },
  {
    name: 'wait_subagents',
    description:
      'Wait until subagents have settled (finished what they were given) and get their answers. mode "all" (default) waits for every one, ' +
      '"any" for the first; subagent_ids defaults to all of your subagents.',
    parameters: {
      type: 'object',
      properties: {
        subagent_ids: { type: 'array', items: SUBAGENT_ID, minItems: 1, maxItems: 64 },
        mode: { type: 'string', enum: ['all', 'any'] },
      },
      additionalProperties: false,
    },
    executor: 'cooperation',
    requiresApproval: false,
    idempotent: true,
    sideEffects: false,
    source: 'coordination',
  },
  {
    name: 'interrupt_subagent',
    description: 'Cancel what a subagent is doing now (its queued messages wait until it is messaged again).',
    parameters: { type: 'object', properties: { subagent_id: SUBAGENT_ID }, required: ['subagent_id'], additionalProperties: false },
    executor: 'coordinator',
    requiresApproval: false,
    idempotent: true,
    sideEffects: true,
    source: 'coordination',
  },
];

/** The coordination tools, as offered to a coordinator's model. */
export function coordinationTools(): ResolvedTool[] {
  return TOOLS.map((tool) => ({ ...tool }));
}
