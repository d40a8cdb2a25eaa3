import type { ToolSource } from './metrics.js';

/** The `source` label of a tool call: a resolved tool's source (`builtin`, `mcp:<server_label>`, `client`), or `unknown` (no such tool). */
export function toolSourceLabel(source: string | undefined): ToolSource {
  if (source === 'builtin' || source === 'client') return source;
  if (source?.startsWith('mcp:')) return 'mcp';
  return 'unknown';
}
