import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutcome } from '../tool.types.js';

/** Keeps one tool's answer from flooding the model's context and the items table. */
export const MAX_MCP_OUTPUT_CHARS = 100_000;

/** What a `tools/call` result becomes: the model's output, and whether the tool succeeded. */
export function outcomeOf(result: CallToolResult): ToolOutcome {
  return { success: result.isError !== true, output: outputOf(result) };
}

/** Text parts joined by newlines; other parts named; structured content when there is no text. */
function outputOf(result: CallToolResult): string {
  const content = result.content ?? [];
  const texts = content.filter((part) => part.type === 'text').map((part) => part.text);
  let output: string;
  if (texts.length === 0 && result.structuredContent !== undefined) {
    output = JSON.stringify(result.structuredContent);
  } else {
    output = content
      .map((part) => {
        switch (part.type) {
          case 'text':
            return part.text;
          case 'resource':
            return `[resource ${part.resource.uri}]`;
          case 'resource_link':
            return `[resource_link ${part.uri}]`;
          default:
            return `[${part.type}]`;
        }
      })
      .join('\n');
  }
  if (output.length <= MAX_MCP_OUTPUT_CHARS) return output;
  return `${output.slice(0, MAX_MCP_OUTPUT_CHARS)}\n[truncated: ${output.length - MAX_MCP_OUTPUT_CHARS} more characters]`;
}

