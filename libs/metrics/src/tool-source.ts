import type { ToolSource } from './metrics.js';

/** The `source` label of a tool call: a resolved tool's source (`builtin`, `mcp:<server_label>`, `client`, `coordination`, `environment`: the harness's), or `unknown` (no such tool). */
export function toolSourceLabel(source: string | undefined): ToolSource {
  if (source === 'builtin' || source === 'client' || source === 'coordination' || source === 'environment') return source;
  if (source?.startsWith('mcp:')) return 'mcp';
  return 'unknown';
}
