import { type FormEvent, useId, useState } from 'react';
import type { AdminAgent, AgentDefinition, AgentVersion, FieldError } from '#libs/sdk';
import { fieldErrors, problem } from './admin-ui.js';

/** The definition an agent answers (effective values), as a PUT body: used when no version says what was written. */
export function definitionOf(agent: AdminAgent): AgentDefinition {
  return {
    name: agent.name,
    description: agent.description,
    instructions: agent.yuxi.instructions ?? '',
    model: agent.model,
    tools: agent.yuxi.tools,
    tool_approval_mode: agent.yuxi.tool_approval_mode,
    limits: agent.yuxi.limits,
    context: agent.yuxi.context,
    multi_agent: agent.yuxi.multi_agent,
    visibility: agent.yuxi.visibility,
  } as AgentDefinition;
}

export function versionJson(version: AgentVersion): string {
  return JSON.stringify(version.definition, null, 2);
}

/** A starting point for a new agent: the scripted model answers without a provider. */
export const NEW_AGENT_TEMPLATE = JSON.stringify(
  {
    name: 'My agent',
    description: 'What it is for.',
    instructions: 'Be brief and friendly.',
    model: 'scripted:echo',
    tools: [{ type: 'builtin', name: 'calculator' }],
    tool_approval_mode: 'default',
    limits: { max_tool_calls: 10 },
    visibility: 'public',
  },
  null,
  2,
);

/** Where a JSON.parse error is, as "line 3, column 7" (V8 says a position, newer ones also the line). */
function whereInJson(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/line \d+ column \d+/.test(message)) return message;
  const at = /position (\d+)/.exec(message);
  if (!at) return message;
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${message} (line ${line}, column ${column})`;
}

type Parsed = { ok: true; value: AgentDefinition } | { ok: false; message: string };

export function parseDefinition(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `This is not valid JSON: ${whereInJson(text, error)}. Nothing was sent; correct it and save again.` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, message: 'The definition must be one JSON object ({ … }). Nothing was sent.' };
  return { ok: true, value: value as AgentDefinition };
}

export interface EditorProps {
  /** The text the editor starts with (remount with another `key` to load another). */
  initial: string;
  submitLabel: string;
  /** Sends the parsed definition; resolves with the saved agent. */
  save: (definition: AgentDefinition) => Promise<AdminAgent>;
  onSaved?: (agent: AdminAgent) => void;
  /** Checks outside the definition before sending (e.g. the agent id): false stops the save (the check shows its own error). */
  precheck?: () => boolean;
}

/**
 * The whole agent definition as JSON, saved by PUT (a replacement, not a patch). Invalid JSON is
 * reported before anything is sent; a 422 lists its problems field by field under a heading that
 * the textarea names in aria-describedby.
 */
export function AgentEditor({ initial, submitLabel, save, onSaved, precheck }: EditorProps) {
  const [text, setText] = useState(initial);
  const [busy, setBusy] = useState(false);
  const [parseError, setParseError] = useState<string | null>(null);
  const [fields, setFields] = useState<FieldError[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const id = useId();
  const ids = { text: `${id}-json`, help: `${id}-help`, parse: `${id}-parse`, fields: `${id}-fields`, failure: `${id}-failure`, redacted: `${id}-redacted` };
  const redacted = text.includes('"***"') || text.includes('***@') || text.includes('=***');

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(null);
    setFailure(null);
    setFields(null);
    const parsed = parseDefinition(text);
    setParseError(parsed.ok ? null : parsed.message);
    const ready = precheck?.() ?? true;
    if (!parsed.ok || !ready) return;
    setBusy(true);
    try {
      const agent = await save(parsed.value);
      setSaved(`Saved: ${agent.name} is now version ${agent.yuxi.version}.`);
      onSaved?.(agent);
    } catch (error) {
      const perField = fieldErrors(error);
      if (perField) setFields(perField);
      else setFailure(`Not saved. ${problem(error)}`);
    } finally {
      setBusy(false);
    }
  };

  const describedBy = [ids.help, redacted && ids.redacted, parseError && ids.parse, fields && ids.fields, failure && ids.failure].filter(Boolean).join(' ');
  return (
    <form className="agent-editor" onSubmit={submit} noValidate>
      <label htmlFor={ids.text}>Agent definition (JSON)</label>
      <p id={ids.help} className="muted hint">
        The whole definition: saving replaces the agent and makes its next version. Sessions keep the version they were created with.
      </p>
      {redacted && (
        <p id={ids.redacted} className="warning">
          MCP header values and URL credentials are shown as <code>***</code>. Saving sends them as written: type the real values in again first.
        </p>
      )}
      <textarea
        id={ids.text}
        className="json"
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        rows={Math.min(28, Math.max(10, text.split('\n').length + 1))}
        value={text}
        onChange={(event) => setText(event.target.value)}
        aria-invalid={parseError || fields ? true : undefined}
        aria-describedby={describedBy}
      />
      {parseError && (
        <p id={ids.parse} role="alert" className="error">
          {parseError}
        </p>
      )}
      {fields && (
        <div id={ids.fields} role="alert" className="field-errors">
          <h3>
            Not saved: {fields.length === 1 ? 'one field needs' : `${fields.length} fields need`} fixing
          </h3>
          <ul>
            {fields.map((field, index) => (
              <li key={`${index}-${field.field}`}>
                <code>{field.field}</code> {field.errors.join('; ')}
              </li>
            ))}
          </ul>
        </div>
      )}
      {failure && (
        <p id={ids.failure} role="alert" className="error">
          {failure}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Saving…' : submitLabel}
        </button>
        <p role="status" className="ok">
          {saved}
        </p>
      </div>
    </form>
  );
}
