import { Injectable } from '@nestjs/common';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AppConfig } from '#libs/config';
import { createGuardedFetch } from '#libs/outbound';
import type { McpToolDeclaration } from '../tool.types.js';

/**
 * The fetch every request to an MCP server, and to the OAuth endpoints it names (protected resource
 * and authorization server metadata, token endpoint), goes through: the outbound address policy
 * (libs/outbound), checked before the request and by the socket's lookup at connect time. Private,
 * loopback, link-local and reserved addresses are refused unless MCP_ALLOW_PRIVATE_NETWORKS; the
 * hosts of MCP_ALLOWED_HOSTS skip that refusal for the servers of agents administrators own
 * (`admin_owned` in a snapshot: public agents) and never for a user's private agent.
 */
@Injectable()
export class McpOutbound {
  private readonly userFetch: FetchLike;
  private readonly adminFetch: FetchLike;

  constructor(config: AppConfig) {
    const maxResponseBytes = config.mcpMaxResponseBytes;
    this.userFetch = createGuardedFetch({ allowPrivate: config.mcpAllowPrivateNetworks, maxResponseBytes });
    this.adminFetch = createGuardedFetch({ allowPrivate: config.mcpAllowPrivateNetworks, allowedHosts: config.mcpAllowedHosts, maxResponseBytes });
  }

  /** The fetch for `decl`'s server and its OAuth endpoints. */
  fetchFor(decl: McpToolDeclaration): FetchLike {
    return decl.admin_owned === true ? this.adminFetch : this.userFetch;
  }
}
