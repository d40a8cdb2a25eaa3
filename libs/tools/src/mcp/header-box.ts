import { SecretCipher } from '#libs/secrets';
import type { McpToolDeclaration, ToolDeclaration } from '../tool.types.js';
import { McpConfigError } from './remote-errors.js';

/** How a sealed header value starts: the stored form, never sent (an unsealed value never starts so). */
const SEALED = 'sealed:v1:';

/**
 * Static MCP header values at rest (an agent's `headers`: API keys, tenant tokens): sealed under
 * SECRETS_KEY where the deployment has one (AES-256-GCM, bound to the server URL and the header's
 * name, so a value copied onto another server's declaration does not open), like named secrets
 * and webhook signing secrets; without the key they are stored as written. The api seals them when
 * an agent is saved (its row, its versions, and so every session snapshot), the worker opens them
 * as a request leaves. Values saved before sealing existed open as they are.
 */
export class McpHeaderBox {
  private readonly cipher: SecretCipher | null;

  constructor(secretsKey: string | undefined) {
    this.cipher = secretsKey ? new SecretCipher(secretsKey) : null;
  }

  /** `tools` with every MCP header value sealed (unchanged without SECRETS_KEY). */
  sealTools(tools: ToolDeclaration[]): ToolDeclaration[] {
    const cipher = this.cipher;
    if (!cipher) return tools;
    return tools.map((tool) => {
      if (tool.type !== 'mcp' || !tool.headers) return tool;
      const headers = Object.fromEntries(
        Object.entries(tool.headers).map(([name, value]) => [name, value.startsWith(SEALED) ? value : `${SEALED}${cipher.seal(value, 'mcp-header', aad(tool.server_url, name)).toString('base64')}`]),
      );
      return { ...tool, headers };
    });
  }

  /** `tools` with every MCP header value as written (to compare a definition with what is stored). */
  openTools(tools: ToolDeclaration[]): ToolDeclaration[] {
    return tools.map((tool) => (tool.type === 'mcp' && tool.headers ? { ...tool, headers: this.headers(tool) } : tool));
  }

  /** The header values of a declaration as they are sent. Throws (naming no value) when one cannot be opened. */
  headers(decl: McpToolDeclaration): Record<string, string> {
    const opened: Record<string, string> = {};
    for (const [name, value] of Object.entries(decl.headers ?? {})) {
      if (!value.startsWith(SEALED)) {
        opened[name] = value;
        continue;
      }
      if (!this.cipher) throw new McpConfigError(`the header ${name} of MCP server "${decl.server_label}" is sealed and SECRETS_KEY is not set`);
      try {
        opened[name] = this.cipher.open(Buffer.from(value.slice(SEALED.length), 'base64'), 'mcp-header', aad(decl.server_url, name));
      } catch {
        throw new McpConfigError(`the header ${name} of MCP server "${decl.server_label}" cannot be opened (SECRETS_KEY changed?): save the agent again`);
      }
    }
    return opened;
  }
}

function aad(serverUrl: string, headerName: string): string {
  return `${serverUrl}\0${headerName.toLowerCase()}`;
}
