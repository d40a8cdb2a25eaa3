import { randomUUID } from 'node:crypto';
import { API, http, newKey } from './http.js';

/** A fresh agent (admin PUT) for one test; its model defaults to a unique `openai:` name, so the fake server's script is the test's own. */
export async function putAgent(definition: Record<string, unknown>, agentId = `t-${randomUUID().slice(0, 8)}`): Promise<{ id: string; model: string; agent: any }> {
  const model = (definition.model as string | undefined) ?? `openai:m-${randomUUID()}`;
  const res = await http(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: `Agent ${agentId}`, ...definition, model } });
  if (res.status !== 201 && res.status !== 200) throw new Error(`PUT agent failed: ${res.status} ${res.text}`);
  return { id: agentId, model, agent: res.body };
}

/** The model name the fake OpenAI server sees (after `openai:`). */
export function fakeModel(model: string): string {
  return model.replace(/^openai:/, '');
}

export async function createSessionWith(agentId: string, input?: unknown): Promise<any> {
  const res = await http(`${API}/sessions`, { body: input === undefined ? { agent_id: agentId } : { agent_id: agentId, input }, idempotencyKey: newKey('create') });
  if (res.status !== 201) throw new Error(`create session failed: ${res.status} ${res.text}`);
  return res.body;
}
