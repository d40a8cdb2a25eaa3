import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AgentsService, assertApprovalMode, assertModelOverride, parseTtl, resolveSessionTtl } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { agentViewerOf, type Principal } from '#libs/auth';
import { sessionBudgetView, writeSessionBudget } from '#libs/budgets';
import { DomainError } from '#libs/errors';
import type { OutgoingEvent } from '#libs/events';
import { type AcceptedReceipt, acceptingInput, IdempotencyService, type IdempotentResponse, type Nudge, ProjectsRepository, SessionsRepository, toSessionDto, turnEvents } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { ModelRegistry } from '#libs/models';
import { SESSION_ATTRIBUTE, setSpanAttributes, tracingOn } from '#libs/telemetry';
import type { CreateSessionDto } from '../dto/create-session.dto.js';
import { checkInputText, parseAgentInput } from '../input-parser.js';
import { chosenMetadata } from '../session-metadata.js';
import { titleFromInput } from '../session-title.js';
import { type Accepted, Acceptance, type Staging } from './acceptance.js';
import { budgetViewerOf } from './budgets.use-case.js';
import { FirstInput } from './first-input.js';
import { SessionEnvironment } from './session-environment.js';

/** Creates a session from a saved agent, with or without a first input (which then queues as input 1). */
@Injectable()
export class CreateSession {
  /** The idempotency scope of a create. */
  static readonly SCOPE = 'sessions.create';

  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsRepository,
    private readonly projects: ProjectsRepository,
    private readonly agents: AgentsService,
    private readonly models: ModelRegistry,
    private readonly firstInput: FirstInput,
    private readonly config: AppConfig,
    private readonly environments: SessionEnvironment,
  ) {}

  async execute(principal: Principal, dto: CreateSessionDto, rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    const create = await this.prepare(principal, dto);
    // A first input is new work: held to the storage quota (when one is set). Here, not in `prepare`: an automation's fire records its own refusals.
    if (create.hasInput) create.staging = this.firstInput.gated(principal.userId, create.staging);
    const result = tracingOn() ? await this.acceptTraced(principal, key, create) : await this.acceptance.accept(principal, CreateSession.SCOPE, key, create.intent, create.work, create.staging);
    if (create.hasInput && !result.replayed) metrics.inputAccepted('agent.session.input.message');
    return result;
  }

  /**
   * Tracing on: a first input is accepted inside an `accept_input` span (whose context it stores),
   * and the request's span names the session once it exists (off: `execute` calls the acceptance straight).
   */
  private async acceptTraced(principal: Principal, key: string, create: PreparedCreate): Promise<IdempotentResponse> {
    const accept = (): Promise<IdempotentResponse> => this.acceptance.accept(principal, CreateSession.SCOPE, key, create.intent, create.work, create.staging);
    const result = create.hasInput ? await acceptingInput(accept) : await accept();
    if (result.sessionId !== null) setSpanAttributes({ [SESSION_ATTRIBUTE]: result.sessionId });
    return result;
  }

  /**
   * The create checked (agent, model, environment, input; inline images decoded, staged by the
   * acceptance) and its transaction's work, for `execute` or a caller that accepts it inside a
   * transaction of its own (an automation's invocation).
   */
  async prepare(principal: Principal, dto: CreateSessionDto): Promise<PreparedCreate> {
    const messages = dto.input === undefined ? null : parseAgentInput(dto.input).messages;
    if (messages) checkInputText(dto.input, messages, this.config.maxInputTextBytes, 'input');
    if (!messages && (dto.stream === true || dto.yuxi?.attachment_file_ids !== undefined)) {
      throw DomainError.validation([{ field: 'input', errors: ['stream=true and attachment_file_ids require a non-empty input'] }]);
    }
    const attachmentFileIds = dto.yuxi?.attachment_file_ids ?? [];
    const agent = await this.agents.getVisible(agentViewerOf(principal), dto.agent_id);
    const model = this.models.validate(dto.agent?.model ?? this.agents.effectiveModel(agent));
    const agentSnapshot = this.agents.snapshot(agent, { userId: principal.userId, isAdmin: principal.isAdmin });
    if (dto.agent?.model !== undefined) assertModelOverride(principal, agentSnapshot.policy, this.agents.effectiveModel(agent), model, 'agent.model');
    const toolApprovalMode = dto.tool_approval_mode ?? agent.toolApprovalMode;
    if (dto.tool_approval_mode !== undefined) assertApprovalMode(principal, agentSnapshot.policy, dto.tool_approval_mode, 'tool_approval_mode');
    const environment = await this.environments.resolve(agent, dto.environment);
    const ownTtl = parseTtl(dto.yuxi?.ttl, 'yuxi.ttl');
    if (ownTtl.errors.length > 0) throw DomainError.validation(ownTtl.errors);
    // Inline images become session files; the intent holds each one's SHA-256, so a replay hashes the same.
    const images = messages ? await this.firstInput.decode(principal.userId, messages) : null;

    const metadata = chosenMetadata(dto.metadata, dto.yuxi?.metadata);
    // Top-level metadata is yuxi.metadata under its upstream name. `environment: {type: "none"}` stays
    // out of the intent as before (a session created before environments replays the same); any
    // other environment is part of it as sent.
    const body: Partial<CreateSessionDto> = { ...dto };
    if (dto.environment?.type === 'none') delete body.environment;
    delete body.metadata;
    const intentBody = metadata === undefined ? body : { ...body, yuxi: { ...body.yuxi, metadata } };
    const intent = { operation: 'sessions.create', body: { ...intentBody, input: images ? images.intentMessages() : null } };
    const work = async (manager: EntityManager): Promise<Accepted> => {
      // A live project of the caller (else 404), share-locked until commit: a concurrent delete
      // lands before this session (which then fails) or after it (a session like the others).
      const project = dto.project_id === undefined ? null : await this.projects.getVisible(principal.userId, dto.project_id, manager);
      await this.environments.checkFiles(manager, principal.userId, environment);
      // The TTL it goes by: its own within its project's and agent's (the strictest of each field).
      const ttl = resolveSessionTtl({ own: ownTtl.ttl, project: project?.ttl, agent: agent.ttl }, 'yuxi.ttl');
      if (ttl.errors.length > 0) throw DomainError.validation(ttl.errors);
      const session = await this.sessions.create(
        manager,
        {
          ownerId: principal.userId,
          agentId: agent.id,
          model,
          toolApprovalMode,
          instructions: agent.instructions,
          agentSnapshot,
          // Without a title: the start of the first message (what a list of sessions shows).
          title: dto.title ?? titleFromInput(messages),
          projectId: project?.id ?? null,
          // The sessions of a project share its workdir.
          ...(project ? { workdirId: project.id } : {}),
          treeMaxConcurrent: agent.multiAgent?.enabled ? agent.multiAgent.max_concurrent_subagents : null,
          metadata: metadata ?? {},
          environment,
          ttl: ttl.ttl,
        },
        messages !== null,
      );
      // In the same transaction: an unknown or already attached file refuses the whole create.
      const receipt = images ? await this.firstInput.queue(manager, principal.userId, session, images, attachmentFileIds) : null;
      const budget = dto.yuxi?.budget === undefined ? null : await writeSessionBudget(manager, { id: session.id, accountId: budgetViewerOf(principal).accountId, createdBy: principal.actorId, appId: principal.appId }, { limits: { ...dto.yuxi.budget.limits }, onExceeded: dto.yuxi.budget.on_exceeded ?? 'pause' });
      const body = toSessionDto(session, receipt);
      body.yuxi.budget = budget ? sessionBudgetView(budget) : null;
      // The session stream starts with the session itself; a stream=true create replays from here.
      const events: OutgoingEvent[] = [turnEvents.sessionCreated(body)];
      if (receipt) events.push(turnEvents.accepted(receipt));
      return { status: 201, body, sessionId: session.id, receipt, events, nudges: firstInputNudges(receipt, attachmentFileIds.length > 0) };
    };
    return { intent, work, staging: images?.staging, hasInput: messages !== null };
  }
}

/** A checked create: its idempotency intent, its transaction's work, the staging of its inline images. */
export interface PreparedCreate {
  intent: unknown;
  work: (manager: EntityManager) => Promise<Accepted>;
  staging: Staging | undefined;
  hasInput: boolean;
}

/** A session created with a first input: the queue may claim it, once its attachments (if any) are prepared. */
function firstInputNudges(receipt: AcceptedReceipt | null, hasAttachments: boolean): Nudge[] {
  if (!receipt?.input_id) return [];
  return hasAttachments ? [{ kind: 'prepare', inputId: receipt.input_id }, { kind: 'queue' }] : [{ kind: 'queue' }];
}
