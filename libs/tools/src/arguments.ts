import { isRecord } from './declarations.js';
import type { ValidateFunction } from 'ajv';
import { compileSchema, describeErrors } from './schema-cache.js';
import type { ResolvedTool } from './tool.types.js';

/**
 * Checks the JSON arguments a model produced for a call. The error text goes back to the model as
 * the call's output, so it names the tool and says what to fix.
 */
export function validateToolArguments(
  tool: ResolvedTool,
  json: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  const prefix = `Invalid arguments for ${tool.name}`;
  let value: unknown;
  try {
    // Some models send an empty string for a call without arguments.
    value = json.trim() === '' ? {} : JSON.parse(json);
  } catch (err) {
    return { ok: false, error: `${prefix}: not valid JSON (${(err as Error).message})` };
  }
  if (!isRecord(value)) return { ok: false, error: `${prefix}: must be a JSON object` };
  const validate = compiled(tool.parameters);
  // Only an MCP server's schema can be uncompilable (function schemas are checked when saved);
  // the server validates its own arguments, so the call goes ahead.
  if (!validate || validate(value)) return { ok: true, value };
  return { ok: false, error: `${prefix}: ${describeErrors(validate.errors)}` };
}

function compiled(schema: Record<string, unknown>): ValidateFunction | undefined {
  try {
    return compileSchema(schema);
  } catch {
    return undefined;
  }
}
