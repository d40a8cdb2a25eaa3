import type { FrozenInputConfig } from '#libs/inputs';
import type { SessionEntity } from '#libs/sessions';

/**
 * The configuration an input freezes when it is received: the session's model, approval mode,
 * instructions and agent snapshot (tools, limits), with a follow-up's own overrides. The run that
 * consumes the input uses exactly this, whatever changes afterwards.
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
  return config;
}
