import { ApiProperty, type ApiPropertyOptions, ApiPropertyOptional } from '@nestjs/swagger';
import { BUDGET_LIMIT_KEYS } from '#libs/budgets';
import { FAILURE_SIDE_EFFECTS, type FailureSideEffects } from '#libs/errors';
import { RUN_STATUSES, TURN_STATUSES } from '../machines/turn-states.js';
import { CALL_ITEM_TYPES, COMPACTION_TRIGGERS } from '../tables/turn.entities.js';

export class PublicErrorDto {
  @ApiProperty({
    example: 'model_rate_limited',
    description:
      'Why the run or turn failed: `model_rate_limited`, `model_timeout`, `model_context_length_exceeded`, `model_auth_failed`, `model_bad_request`, `model_unavailable`, `turn_model_call_limit`, `turn_tool_call_limit`, `turn_timeout`, `context_window_exceeded`, `run_takeover_limit`, `run_failed`. Open: a `scripted:` model fails with whatever code its `[[fail:CODE]]` directive names.',
  })
  code!: string;
  @ApiProperty() message!: string;
  @ApiPropertyOptional({
    description:
      'A failed turn or run: whether submitting the same input again is advised. True when the cause may be gone on a later try (`model_rate_limited`, `model_timeout`, `model_unavailable`, `run_failed`) and no tool that may have changed something and is not declared `idempotent` ran or may have run (an MCP tool not declared idempotent, a coordination call that created, messaged or interrupted a subagent, the client\'s function tools): repeating an idempotent tool\'s effect is harmless, so `side_effects` may be `possible` on a retryable failure. False for a limit, a request the provider refuses or a turn whose workers kept dying (`run_takeover_limit`), which the same input meets again, and for any code outside this list.',
  })
  retryable?: boolean;
  @ApiPropertyOptional({
    enum: FAILURE_SIDE_EFFECTS,
    description:
      'A failed turn or run: whether the turn may have changed something outside itself before it failed, derived from its committed steps and items, apart from whether repeating that is safe (`retryable`). `none`: nothing (no message, no tool call: it failed before any step). `output`: it produced messages or tool calls (read them from the items), but only tools that change nothing ran (the builtins: they read files, the clock or a search provider, or ask the user). `possible`: a tool that may change something started, whether or not it is declared `idempotent` (every MCP tool; `create_subagent`, `message_subagent` and `interrupt_subagent`, whose subagents keep working after the turn fails), or the client ran function tools for it.',
  })
  side_effects?: FailureSideEffects;
}

export class ContentPartDto {
  @ApiProperty({ enum: ['input_text', 'input_image', 'output_text'] }) type!: string;
  @ApiPropertyOptional() text?: string;
  @ApiPropertyOptional({
    description:
      'input_image: where the image\'s bytes are: the path of its session file on this API (`GET /api/v1/agents/sessions/{session_id}/files/{file_id}/content`, authorised like the session). Items stored before inline images became session files keep their `data:` URL. An item a fork inherited shows the fork\'s path, which serves it even after the source is deleted.',
    example: '/api/v1/agents/sessions/01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e/files/0123456789abcdef0123456789abcdef/content',
  })
  image_url?: string;
  @ApiPropertyOptional({ description: 'input_image: the session file holding the image (32 hexadecimal characters); absent where image_url is a data URL.', pattern: '^[0-9a-f]{32}$' })
  file_id?: string;
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    description: 'output_text only: citations of the text. None are produced yet: always empty.',
  })
  annotations?: Record<string, unknown>[];
}

export class ReasoningPartDto {
  @ApiProperty({ enum: ['reasoning_text'] }) type!: string;
  @ApiProperty({ description: 'The reasoning text the model streamed for this message (raw reasoning, not a summary).' }) text!: string;
}

export class ItemYuxiDto {
  @ApiProperty() turn_id!: string;
  @ApiProperty({ type: String, nullable: true }) run_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The input a user message was consumed from (of the session that ran the turn: an item a fork inherited names an input of its source, readable there only).' }) input_id!: string | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds when the item was projected into history.' }) created_at!: number;
  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description: 'Message items: Unix seconds the input this message came from was durably received (its receipt, as `GET …/inputs/{input_id}` shows it); null for a message not from an input (the assistant\'s).',
  })
  received_at?: number | null;
  @ApiPropertyOptional({ description: 'function_call_output: whether the tool succeeded.' }) success?: boolean;
  @ApiPropertyOptional({
    type: 'array',
    description:
      'function_call_output: the images the tool returned (an MCP tool\'s `image` content), stored as files of the session\'s workdir (origin `tool`), in the order the output\'s `[image N: …]` lines name them; download each with `GET /api/v1/agents/sessions/{session_id}/files/{file_id}/content`. The model is shown them after the tool\'s output. Absent when the tool returned none.',
    items: { type: 'string', pattern: '^[0-9a-f]{32}$' },
  })
  file_ids?: string[];
  @ApiPropertyOptional({ enum: COMPACTION_TRIGGERS, description: 'compaction: what started it.' }) trigger?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'compaction: the last item the summary covers (the items stay readable).' }) through_item_id?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'compaction: the first item kept verbatim after the summary; null when none is.' })
  first_kept_item_id?: string | null;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'compaction: the context\'s estimated size before, in tokens.' }) tokens_before?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'compaction: the estimated size after (instructions, tools, summary, kept items).' }) tokens_after?: number;
  @ApiPropertyOptional({ description: 'compaction: the summariser, `provider:model`.' }) model?: string;
  @ApiPropertyOptional({ type: () => CallUsageDto, nullable: true, description: 'compaction: the summary call\'s tokens (counted in the turn\'s usage).' }) usage?: CallUsageDto | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Coordination calls: the member session the call concerns (a create\'s is known from the call; null when the call names a member by name).' })
  subagent_session_id?: string | null;
  @ApiPropertyOptional({
    type: [ReasoningPartDto],
    description:
      'Assistant messages whose model streamed reasoning (where the provider streams it): the reasoning blocks, by `reasoning_index` (one per message today). Kept once complete: `yuxi.session.turn.reasoning.done` is sent after it is saved.',
  })
  reasoning?: ReasoningPartDto[];
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'integer', minimum: 0 },
    description:
      'An active (`in_progress`) message only: the `content` indices already persisted complete. After a resync, restore these blocks from here, keep your own deltas of the others, and ignore late deltas of these. Empty while the text still streams.',
  })
  completed_content_indices?: number[];
  @ApiPropertyOptional({ type: 'array', items: { type: 'integer', minimum: 0 }, description: 'An active message only: the `yuxi.reasoning` indices already persisted complete (see completed_content_indices).' })
  completed_reasoning_indices?: number[];
}

export class ItemDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['message', ...CALL_ITEM_TYPES, 'function_call_output', 'compaction'] }) type!: string;
  @ApiPropertyOptional({ enum: ['user', 'assistant'], description: 'Messages only.' }) role?: string;
  @ApiProperty({
    enum: ['in_progress', 'completed', 'incomplete'],
    description: 'command_execution: in_progress while it runs; completed when it ran to its exit (any exit code); incomplete when it did not (a limit, a lost worker, a refused call: see `output`).',
  })
  status!: string;
  @ApiPropertyOptional({ type: [ContentPartDto], description: 'Messages only.' }) content?: ContentPartDto[];
  @ApiPropertyOptional({ description: 'Calls (function_call, command_execution, coordination calls) and function_call_output: links a call and its output.' }) call_id?: string;
  @ApiPropertyOptional({ description: 'function_call: the tool name.' }) name?: string;
  @ApiPropertyOptional({ description: 'function_call: the arguments, as the JSON string the model produced.' }) arguments?: string;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description:
      'function_call_output: what the tool returned (what the model sees). command_execution: stdout and stderr together, cut at SANDBOX_OUTPUT_MAX_BYTES (null while it runs; its live output comes as `agent.output.command_execution_output.delta`).',
  })
  output?: string | null;
  @ApiPropertyOptional({ enum: ['final_answer', 'commentary'], description: 'Assistant messages only: final_answer for the output of the turn result run.' })
  phase?: string;
  @ApiPropertyOptional({ description: 'compaction: the summary that stands for the history before it in later model contexts.' }) summary?: string;
  @ApiPropertyOptional({ description: 'create_subagent_call: the agent the member runs with (absent: the coordinator\'s).' }) agent_id?: string;
  @ApiPropertyOptional({ description: 'create_subagent_call: the member\'s task (its first message).' }) task?: string;
  @ApiPropertyOptional({ description: 'message_subagent_call, interrupt_subagent_call: the member (its session id or name).' }) subagent_id?: string;
  @ApiPropertyOptional({ description: 'message_subagent_call: the message sent.' }) message?: string;
  @ApiPropertyOptional({ type: [String], description: 'wait_subagents_call: the members waited for (absent: all of the coordinator\'s).' }) subagent_ids?: string[];
  @ApiPropertyOptional({ enum: ['all', 'any'], description: 'wait_subagents_call: wait for all (default) or any.' }) mode?: string;
  @ApiPropertyOptional({ description: 'command_execution (a `shell` call in the session\'s workspace): the turn it belongs to.' }) turn_id?: string;
  @ApiPropertyOptional({ description: 'command_execution: the command, run with `bash -lc`.' }) command?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'command_execution: the directory it ran in (`/workspace`).' }) cwd?: string | null;
  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    description: 'command_execution: the exit code; null while it runs, and when it did not exit on its own (a limit or a signal ended it, its worker was lost): `output` then says why.',
  })
  exit_code?: number | null;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, nullable: true, description: 'command_execution: how long it ran, in milliseconds; null while it runs or when unknown.' })
  duration_ms?: number | null;
  @ApiProperty({ type: ItemYuxiDto }) yuxi!: ItemYuxiDto;
}

/** One model call's tokens, as its provider reported them. */
export class CallUsageDto {
  @ApiProperty({ type: 'integer', minimum: 0 }) input_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) output_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Input tokens the provider served from its prompt cache (part of input_tokens).' }) cached_tokens!: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Output tokens spent reasoning, where the provider reports them (part of output_tokens).' }) reasoning_tokens?: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) total_tokens!: number;
}

/** What a run, a turn, a session or a tree used: the sums of its calls in the usage ledger. */
export class UsageDto {
  @ApiProperty({ type: 'integer', minimum: 0 }) input_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) output_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Input tokens the provider served from its prompt cache (part of input_tokens).' }) cached_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Output tokens the model spent reasoning, where the provider reports them (part of output_tokens).' }) reasoning_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) total_tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Model calls made: the turn\'s own, context compactions and MCP sampling requests.' }) model_calls!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Tool calls with a result, sandbox commands included.' }) tool_calls!: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    nullable: true,
    description: 'Cost in integer micro-dollars at the deployment\'s model prices, each call at the price in force when it was made; null when none of the model calls had a price.',
  })
  cost_microusd!: number | null;
}

export class WaitpointQuestionDto {
  @ApiProperty({ description: 'Answer it under this id.' }) question_id!: string;
  @ApiProperty() question!: string;
  @ApiProperty({ type: [String] }) options!: string[];
  @ApiProperty() multi_select!: boolean;
  @ApiProperty({ description: 'Whether an answer outside `options` is accepted.' }) allow_other!: boolean;
}

export class WaitpointToolCallDto {
  @ApiProperty() call_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'The JSON string the model produced.' }) arguments!: string;
}

export class WaitpointElicitationDto {
  @ApiProperty({ description: 'The MCP tool call that asked (its function_call item has this call_id).' }) call_id!: string;
  @ApiProperty({ description: 'The MCP server (its `server_label` in the agent).' }) server_label!: string;
  @ApiProperty({ enum: ['form', 'url'], description: 'form: the questions after `action` are the fields the server asks for; url: the user opens `url`, then answers `action` alone.' })
  mode!: string;
  @ApiProperty({ description: 'What the server says to the user.' }) message!: string;
  @ApiPropertyOptional({ description: 'url mode: the page to open.' }) url?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'form mode: the JSON Schema the server asked for (a flat object of primitive fields). Each field is a question of this waitpoint; answers are converted to the field\'s type (numbers, integers, `true`/`false`), and 422 names a field whose answer does not fit.',
  })
  requested_schema?: Record<string, unknown>;
}

export class WaitpointDto {
  @ApiProperty() id!: string;
  @ApiProperty({
    enum: ['question', 'approval', 'client_tool', 'cooperation', 'budget'],
    description:
      'cooperation: a coordinator waits for its members (wait_subagents); the turn stays in_progress and nothing is asked of anyone. budget: a budget in the session\'s scope has no room (`budget_id`, `limit`, `spent`); answer with `yuxi.session.input.resume` and the approval decision `{"call_id": "budget", "decision": "approve" | "reject"}` (approve is 409 `budget_exceeded` until the budget has room again; reject fails the turn with `budget_exceeded`).',
  })
  kind!: string;
  @ApiProperty({ description: 'The run that stopped here.' }) run_id!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiPropertyOptional({ type: [WaitpointQuestionDto], description: 'kind=question.' }) questions?: WaitpointQuestionDto[];
  @ApiPropertyOptional({ type: [WaitpointToolCallDto], description: 'kind=approval (calls to approve), client_tool (calls to execute) or cooperation (the wait calls).' })
  tool_calls?: WaitpointToolCallDto[];
  @ApiPropertyOptional({
    type: WaitpointElicitationDto,
    description:
      'kind=question asked by an MCP server in the middle of a tool call (MCP elicitation). The first question, `action`, takes `accept`, `decline` or `cancel`; on accept, answer the field questions (optional fields may be left out, and take their default). The answer goes back to the server and the call continues; if the worker holding the call stopped, or MCP_ELICITATION_TIMEOUT_MS passed, the model is told the outcome is unknown.',
  })
  elicitation?: WaitpointElicitationDto;
  @ApiPropertyOptional({ description: 'kind=budget: the budget without room (`GET /api/v1/agents/budgets/{id}`).' }) budget_id?: string;
  @ApiPropertyOptional({ enum: BUDGET_LIMIT_KEYS, description: 'kind=budget: the limit key it reached.' }) limit?: string;
  @ApiPropertyOptional({ type: 'integer', description: 'kind=budget: what was spent of that limit in the budget\'s period (committed plus held by calls in flight) when the turn stopped.' }) spent?: number;
}

export class RunYuxiDto {
  @ApiProperty({ type: String, pattern: '^[0-9a-f]{32}$', description: 'The W3C trace id of the trace this run\'s spans belong to (its turn\'s first input\'s, accepted while tracing was on).' })
  trace_id!: string;
}

export class RunDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['yuxi.session.run'] }) object!: 'yuxi.session.run';
  @ApiProperty({ description: 'The session that ran it (a run a fork inherited: the ancestor\'s id).' }) session_id!: string;
  @ApiProperty() turn_id!: string;
  @ApiProperty({
    enum: RUN_STATUSES,
    description: 'requires_action: the run stopped at a waitpoint; the response continues the turn in a new run (resume_from_run_id).',
  })
  status!: string;
  @ApiProperty({ type: UsageDto, nullable: true }) usage!: UsageDto | null;
  @ApiProperty({ type: [String], description: 'Inputs consumed by this run, in received order.' }) input_ids!: string[];
  @ApiProperty() model!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The run this one continues (after a yield, an interruption or a waitpoint).' }) resume_from_run_id!: string | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) completed_at!: number | null;
  @ApiProperty({ type: PublicErrorDto, nullable: true }) error!: PublicErrorDto | null;
  @ApiPropertyOptional({ type: RunYuxiDto, description: 'Present only on a traced run (its input was accepted while tracing was on); absent when the turn was accepted with tracing off, so the run events of an untraced session carry nothing for it.' })
  yuxi?: RunYuxiDto;
}

export class RunSummaryDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: RUN_STATUSES }) status!: string;
  @ApiProperty({ type: [String], description: 'The inputs this run consumed, in received order: a turn\'s first run its batch, a run that took a steer the steer; empty for a run that took none (a takeover after an interruption).' })
  input_ids!: string[];
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) completed_at!: number | null;
  @ApiProperty({ type: PublicErrorDto, nullable: true }) error!: PublicErrorDto | null;
}

export class TurnAgentDto {
  @ApiProperty() id!: string;
  @ApiProperty() model!: string;
}

export class TurnContextDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Tokens of the context sent with the turn\'s last model call (the provider\'s count when it reported one).' }) tokens!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The model\'s window the context is measured against.' }) window_tokens!: number;
  @ApiProperty({ type: String, nullable: true, description: 'The compaction whose summary opened the context (its boundary); null when the context holds the whole history.' })
  compaction_item_id!: string | null;
}

export class TurnSummaryYuxiDto {
  @ApiProperty({ type: String, nullable: true }) current_run_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) result_run_id!: string | null;
  @ApiProperty({ type: WaitpointDto, nullable: true, description: 'What the turn waits for while requires_action, else null.' }) waitpoint!: WaitpointDto | null;
  @ApiProperty({ type: UsageDto, nullable: true, description: 'Tokens used by the turn so far (all its runs).' }) usage!: UsageDto | null;
  @ApiProperty({ type: TurnContextDto, nullable: true, description: 'The model context of the turn\'s last model call, once the turn has settled; null before, or for a turn that called no model.' })
  context!: TurnContextDto | null;
  @ApiPropertyOptional({
    type: String,
    pattern: '^[0-9a-f]{32}$',
    description: 'The W3C trace id of the turn\'s trace (the input that started it was accepted while tracing was on): its spans are read through `GET /sessions/{id}/traces` or in a trace UI. Absent when the turn was accepted with tracing off.',
  })
  trace_id?: string;
}

export class TurnStateYuxiDto extends TurnSummaryYuxiDto {
  @ApiProperty({ description: 'A cancel was accepted and the turn is stopping; false again once it reached its terminal state.' }) cancellation_pending!: boolean;
}

export class TurnDetailYuxiDto extends TurnStateYuxiDto {
  @ApiProperty({ type: [RunDto] }) runs!: RunDto[];
  @ApiProperty({ type: [ItemDto], description: 'The output items of the result run.' }) output!: ItemDto[];
}

export class TurnDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['agent.session.turn'] }) object!: 'agent.session.turn';
  @ApiProperty({ description: 'The session that ran it (a turn a fork inherited: the ancestor\'s id).' }) session_id!: string;
  @ApiProperty({ type: TurnAgentDto }) agent!: TurnAgentDto;
  @ApiProperty({ enum: TURN_STATUSES }) status!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds of the first execution of the turn; resumed runs do not reset it.' }) started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) completed_at!: number | null;
  @ApiProperty({ type: PublicErrorDto, nullable: true }) error!: PublicErrorDto | null;
  // OpenAPI 3.0 spells "always null" as a nullable type whose only value is null (the options' type has no room for it).
  @ApiProperty({ type: 'object', nullable: true, enum: [null], description: 'Always null; usage is reported in yuxi.usage.' } as ApiPropertyOptions) usage!: null;
  @ApiProperty({ type: TurnSummaryYuxiDto }) yuxi!: TurnSummaryYuxiDto | TurnDetailYuxiDto;
}

/** The turn as `yuxi.session.turn.state` carries it: the turn projection plus the cancellation flag. */
export class TurnStateDto extends TurnDto {
  @ApiProperty({ type: TurnStateYuxiDto }) declare yuxi: TurnStateYuxiDto;
}

export class TurnDetailDto extends TurnDto {
  @ApiProperty({ type: TurnDetailYuxiDto }) declare yuxi: TurnDetailYuxiDto;
}

export class TurnListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [TurnDto] }) data!: TurnDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ItemListYuxiDto {
  @ApiProperty({ type: [RunSummaryDto], description: 'Only the runs referenced by items on this page.' }) runs!: RunSummaryDto[];
}

export class ItemListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ItemDto] }) data!: ItemDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
  @ApiProperty({ type: ItemListYuxiDto }) yuxi!: ItemListYuxiDto;
}
