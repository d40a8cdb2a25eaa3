import { newId } from '#libs/database';
import type { AcceptedReceipt } from '../tables/receipt.entity.js';
import type { FrozenInputConfig } from '../tables/input.entity.js';
import type { SessionEntity } from '../tables/session.entity.js';

/**
 * The configuration an input freezes when it is received: the session's model, approval mode,
 * instructions, agent snapshot (tools, limits) and environment, with a follow-up's own
 * overrides. The run that consumes the input uses exactly this, whatever changes afterwards.
 */
export function frozenInputConfig(session: SessionEntity, overrides: { model?: string; toolApprovalMode?: string } = {}): FrozenInputConfig {
  const config: FrozenInputConfig = {
    agent_id: session.agentId,
    model: overrides.model ?? session.model,
    tool_approval_mode: overrides.toolApprovalMode ?? session.toolApprovalMode,
    instructions: session.instructions,
  };
  if (session.agentSnapshot) config.agent = session.agentSnapshot;
  if (session.compactionMode) config.compaction_mode = session.compactionMode;
  if (session.depth > 0) config.cooperation_depth = session.depth;
  // Frozen with the input, so a run knows its tools without reading the session again.
  if (session.environment) config.environment = session.environment;
  return config;
}

/** The receipt of an accepted event (the 202 body); turn_id and run_id are filled by controls that name them. */
export function acceptedReceipt(sessionId: string, inputId: string | null): AcceptedReceipt {
  return {
    object: 'yuxi.session.event.accepted',
    event_id: `evt_${newId().replaceAll('-', '')}`,
    session_id: sessionId,
    input_id: inputId,
    turn_id: null,
    run_id: null,
    status: 'accepted',
  };
}
