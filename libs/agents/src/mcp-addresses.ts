import { hostOf, isAllowedHost, isPublicAddress } from '#libs/outbound';
import { isIP } from 'node:net';
import type { ToolDeclaration } from '#libs/tools';

/** What the outbound policy allows an agent's MCP servers (MCP_ALLOW_PRIVATE_NETWORKS, MCP_ALLOWED_HOSTS). */
export interface McpAddressRules {
  allowPrivate: boolean;
  allowedHosts: readonly string[];
  /** An administrator owns the agent (a public one, or an administrator's own private one): MCP_ALLOWED_HOSTS applies. */
  adminOwned: boolean;
}

/**
 * The MCP URLs of a definition that the outbound policy refuses without asking DNS: a literal
 * address (any spelling URL normalises: 2130706433, 0x7f.1, [::ffff:7f00:1]…) that is not public.
 * Host names are judged when the server is called (the worker's guarded fetch), since what they
 * resolve to may change. Each problem names its field, as `invalid_agent`'s do.
 */
export function refusedMcpAddresses(tools: readonly ToolDeclaration[], rules: McpAddressRules): { field: string; errors: string[] }[] {
  if (rules.allowPrivate) return [];
  const problems: { field: string; errors: string[] }[] = [];
  const judge = (raw: string, field: string) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return;
    }
    const host = hostOf(url);
    if (isIP(host) === 0 || isPublicAddress(host)) return;
    if (rules.adminOwned && isAllowedHost(url, rules.allowedHosts)) return;
    problems.push({ field, errors: ['is a private, loopback, link-local or reserved address, which MCP servers may not be on in this deployment'] });
  };
  tools.forEach((tool, index) => {
    if (tool.type !== 'mcp') return;
    judge(tool.server_url, `tools[${index}].server_url`);
    if (tool.auth?.type === 'oauth_client_credentials') judge(tool.auth.issuer, `tools[${index}].auth.issuer`);
  });
  return problems;
}
