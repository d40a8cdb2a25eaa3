import type { ToolSource } from './metrics.js';

/** The `source` label of a tool call: a resolved tool's source (`builtin`, `mcp:<server_label>`, `client`, `coordination`), or `unknown` (no such tool). */
export function toolSourceLabel(source: string | undefined): ToolSource {
  if (source === 'builtin' || source === 'client' || source === 'coordination') return source;
  if (source?.startsWith('mcp:')) return 'mcp';
  return 'unknown';
}
