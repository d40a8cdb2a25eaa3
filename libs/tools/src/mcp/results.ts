import { isDeepStrictEqual } from 'node:util';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolMedia, ToolOutcome } from '../tool.types.js';

/** Keeps one tool's answer from flooding the model's context and the items table. */
export const MAX_MCP_OUTPUT_CHARS = 100_000;

/**
 * An embedded text resource up to this size (UTF-8 bytes) is shown to the model whole; a larger one
 * is named only, as a link is: the model (or the user) can read it through the server if it needs to.
 */
export const MAX_EMBEDDED_RESOURCE_BYTES = 8 * 1024;

/**
 * What a `tools/call` result becomes: the model's output, whether the tool succeeded, and the images
 * and audio clips it returned. Each media part leaves a numbered line where it stood
 * (`[image 1: image/png]`), so the worker's notes about it (stored, refused) and the images it shows
 * the model afterwards can be matched to the text around it.
 */
export function outcomeOf(result: CallToolResult): ToolOutcome {
  const media: ToolMedia[] = [];
  const output = truncated(outputOf(result, media));
  return media.length > 0 ? { success: result.isError !== true, output, media } : { success: result.isError !== true, output };
}

/** Parts in order, one or more lines each; `structuredContent` as JSON unless a text part already says the same. */
function outputOf(result: CallToolResult, media: ToolMedia[]): string {
  const content = result.content ?? [];
  const lines = content.map((part): string => {
    switch (part.type) {
      case 'text':
        return part.text;
      case 'image':
      case 'audio':
        media.push({ kind: part.type, mimeType: part.mimeType, data: Buffer.from(part.data, 'base64') });
        return `[${part.type} ${media.length}: ${part.mimeType}]`;
      case 'resource': {
        const { resource } = part;
        const type = resource.mimeType ? ` (${resource.mimeType})` : '';
        if ('text' in resource && typeof resource.text === 'string') {
          const bytes = Buffer.byteLength(resource.text, 'utf8');
          if (bytes <= MAX_EMBEDDED_RESOURCE_BYTES) return `[resource ${resource.uri}]\n${resource.text}`;
          return `[resource ${resource.uri}${type} ${bytes} bytes of text, not shown]`;
        }
        const blob = 'blob' in resource && typeof resource.blob === 'string' ? resource.blob : '';
        return `[resource ${resource.uri}${type} ${Buffer.byteLength(blob, 'base64')} bytes, binary, not shown]`;
      }
      case 'resource_link':
        return `[resource_link ${part.uri}${part.mimeType ? ` (${part.mimeType})` : ''} ${part.name}]`.trimEnd();
      default:
        return `[${(part as { type: string }).type}]`;
    }
  });
  const structured = structuredLine(result.structuredContent, content);
  if (structured !== null) lines.push(structured);
  return lines.join('\n');
}

/**
 * The structured result as JSON, or null when there is none or a text part already holds it (the
 * spec asks servers to repeat it as text, as server-everything's `get-structured-content` does: the
 * model should not read it twice). The SDK client validated it against the tool's `outputSchema`.
 */
function structuredLine(structured: CallToolResult['structuredContent'], content: CallToolResult['content']): string | null {
  if (structured === undefined || structured === null) return null;
  const json = JSON.stringify(structured);
  for (const part of content ?? []) {
    if (part.type !== 'text') continue;
    if (part.text.includes(json)) return null;
    if (sameJson(part.text, structured)) return null;
  }
  return json;
}

function sameJson(text: string, value: unknown): boolean {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return false;
  try {
    return isDeepStrictEqual(JSON.parse(trimmed), value);
  } catch {
    return false;
  }
}

function truncated(output: string): string {
  if (output.length <= MAX_MCP_OUTPUT_CHARS) return output;
  return `${output.slice(0, MAX_MCP_OUTPUT_CHARS)}\n[truncated: ${output.length - MAX_MCP_OUTPUT_CHARS} more characters]`;
}
