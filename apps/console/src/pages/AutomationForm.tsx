import { useQuery } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { fieldErrors, problem } from '../admin-ui.js';
import { useConsole } from '../caller.js';
import { statusText } from '../format.js';
import {
  type Automation,
  automations,
  type AutomationTarget,
  browserTimeZone,
  CATCH_UP_POLICIES,
  type CatchUpPolicy,
  inZone,
  type NewAutomation,
  OVERLAP_POLICIES,
  type OverlapPolicy,
} from './automations-api.js';

const OVERLAP_HELP: Record<OverlapPolicy, string> = {
  skip: 'skip a time while the previous run’s turn is still active (recorded as skipped)',
  queue: 'queue it behind the previous run’s turn',
  cancel_previous: 'cancel the previous run’s turn, then fire',
};
const CATCH_UP_HELP: Record<CatchUpPolicy, string> = {
  none: 'fire nothing that was missed (each missed time is recorded as skipped)',
  latest: 'fire the latest missed time once, skip the others',
  all: 'fire every missed time, oldest first (up to the deployment’s bound)',
};

/** The value after it has stopped changing for `ms` (the preview asks the server once the user pauses typing). */
function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

const ZONES: string[] = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];

type Errors = Partial<Record<'name' | 'expression' | 'timezone' | 'run_at' | 'agent_id' | 'message' | 'session_id' | 'instructions', string>>;

/** Which form field a server field error (`target.agent_id`, `target.input[0]…`) belongs to. */
function fieldOf(field: string): keyof Errors | null {
  if (field === 'name' || field === 'expression' || field === 'timezone' || field === 'run_at') return field;
  if (field.startsWith('target.agent')) return 'agent_id';
  if (field.startsWith('target.input')) return 'message';
  if (field.startsWith('target.session_id')) return 'session_id';
  if (field.startsWith('target.instructions')) return 'instructions';
  return null;
}

/** The create form: a schedule (its next five times previewed as it is typed), a target, the overlap and catch-up policies. */
export function AutomationForm({ onCreated, onCancel }: { onCreated: (automation: Automation) => void; onCancel: () => void }) {
  const { client } = useConsole();
  const agents = useQuery({ queryKey: ['agents'], queryFn: () => client.agents.list() });
  const [name, setName] = useState('');
  const [type, setType] = useState<'periodic' | 'once'>('periodic');
  const [expression, setExpression] = useState('0 9 * * 1-5');
  const [timezone, setTimezone] = useState(browserTimeZone);
  const [runAt, setRunAt] = useState('');
  const [targetType, setTargetType] = useState<AutomationTarget['type']>('new_session');
  const [agentId, setAgentId] = useState('');
  const [message, setMessage] = useState('');
  const [sessionId, setSessionId] = useState('');
  const [instructions, setInstructions] = useState('');
  const [overlap, setOverlap] = useState<OverlapPolicy>('skip');
  const [catchUp, setCatchUp] = useState<CatchUpPolicy>('latest');
  const [errors, setErrors] = useState<Errors>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  // Opened by "New automation": the keyboard starts at its first field.
  useEffect(() => document.getElementById('automation-name')?.focus(), []);

  const agentList = agents.data?.data ?? [];
  const chosenAgent = agentId || agentList[0]?.id || '';
  const schedule = useDebounced({ expression: expression.trim(), timezone: timezone.trim() }, 400);
  const preview = useQuery({
    queryKey: ['automation-preview', schedule.expression, schedule.timezone],
    queryFn: ({ signal }) => automations.preview(schedule.expression, schedule.timezone, signal),
    enabled: type === 'periodic' && schedule.expression !== '' && schedule.timezone !== '',
    retry: false,
    staleTime: 30_000,
  });
  const previewFields = fieldErrors(preview.error);
  const previewSays = (field: string) => previewFields?.filter((f) => f.field === field).flatMap((f) => f.errors).join('; ') || undefined;
  const expressionError = errors.expression ?? previewSays('expression');
  const timezoneError = errors.timezone ?? previewSays('timezone');

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFormError(null);
    const next: Errors = {};
    if (!name.trim()) next.name = 'Give the automation a name, to recognise it later.';
    if (type === 'periodic' && !expression.trim()) next.expression = 'Enter a cron expression.';
    if (type === 'periodic' && !timezone.trim()) next.timezone = 'Enter an IANA time zone, e.g. Europe/Paris.';
    const at = runAt ? Math.floor(new Date(runAt).getTime() / 1000) : NaN;
    if (type === 'once' && !Number.isFinite(at)) next.run_at = 'Choose the date and time to run at.';
    else if (type === 'once' && at * 1000 <= Date.now()) next.run_at = 'Choose a time in the future.';
    if (targetType === 'new_session' && !chosenAgent) next.agent_id = 'Choose an agent.';
    if (targetType === 'new_session' && !message.trim()) next.message = 'Write the first message each new session starts with.';
    if (targetType === 'existing_session' && !sessionId.trim()) next.session_id = 'Enter the id of one of your sessions.';
    if (targetType === 'existing_session' && !instructions.trim()) next.instructions = 'Write the message sent to the session each time.';
    setErrors(next);
    const first = Object.keys(next)[0];
    if (first) {
      document.getElementById(`automation-${first.replace('_', '-')}`)?.focus();
      return;
    }
    const target: AutomationTarget =
      targetType === 'new_session'
        ? { type: 'new_session', agent_id: chosenAgent, environment: { type: 'none' }, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: message.trim() }] }] }
        : { type: 'existing_session', session_id: sessionId.trim(), instructions: instructions.trim() };
    const yuxi = { overlap, catch_up: catchUp };
    const params: NewAutomation =
      type === 'periodic' ? { name: name.trim(), type, expression: expression.trim(), timezone: timezone.trim(), target, yuxi } : { name: name.trim(), type, run_at: at, target, yuxi };
    setBusy(true);
    try {
      onCreated(await automations.create(params, `console-${crypto.randomUUID()}`));
    } catch (caught) {
      const fields = fieldErrors(caught);
      if (!fields) {
        setFormError(`Not created. ${problem(caught)}`);
        return;
      }
      const placed: Errors = {};
      const rest: string[] = [];
      for (const f of fields) {
        const at = fieldOf(f.field);
        if (at) placed[at] = [placed[at], f.errors.join('; ')].filter(Boolean).join('; ');
        else rest.push(`${f.field} ${f.errors.join('; ')}`);
      }
      setErrors(placed);
      setFormError(rest.length > 0 ? `Not created: ${rest.join(', ')}` : 'Not created: correct the fields marked below.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <section id="new-automation" aria-labelledby="new-automation-title" className="panel automation-form">
      <h2 id="new-automation-title">New automation</h2>
      <form onSubmit={(event) => void submit(event)} noValidate>
        <Field id="automation-name" label="Name" error={errors.name}>
          <input id="automation-name" value={name} onChange={(e) => setName(e.target.value)} maxLength={256} autoComplete="off" {...invalid('automation-name', errors.name)} />
        </Field>
        <fieldset>
          <legend>When</legend>
          <Choice name="automation-type" checked={type === 'periodic'} onChange={() => setType('periodic')} label="Repeatedly, on a cron schedule" />
          <Choice name="automation-type" checked={type === 'once'} onChange={() => setType('once')} label="Once, at a date and time" />
        </fieldset>
        {type === 'periodic' ? (
          <div className="schedule">
            <div className="schedule-inputs">
              <Field id="automation-expression" label="Cron expression" error={expressionError} hint="5 fields (minute hour day month weekday), or 6 with seconds first; e.g. 0 9 * * 1-5 is 9:00 on weekdays.">
                <input id="automation-expression" value={expression} onChange={(e) => setExpression(e.target.value)} spellCheck={false} autoComplete="off" className="mono" {...invalid('automation-expression', expressionError, true)} />
              </Field>
              <Field id="automation-timezone" label="Time zone" error={timezoneError} hint="An IANA zone; times follow its daylight saving changes.">
                <input id="automation-timezone" value={timezone} onChange={(e) => setTimezone(e.target.value)} list="automation-zones" spellCheck={false} autoComplete="off" {...invalid('automation-timezone', timezoneError, true)} />
              </Field>
              <datalist id="automation-zones">
                {ZONES.map((zone) => (
                  <option key={zone} value={zone} />
                ))}
              </datalist>
            </div>
            <Preview preview={preview} timezone={schedule.timezone} fieldProblem={Boolean(previewSays('expression') ?? previewSays('timezone'))} />
          </div>
        ) : (
          <Field id="automation-run-at" label="Run at" error={errors.run_at} hint={`Your local time (${browserTimeZone()}).`}>
            <input id="automation-run-at" type="datetime-local" value={runAt} onChange={(e) => setRunAt(e.target.value)} {...invalid('automation-run-at', errors.run_at, true)} />
          </Field>
        )}
        <fieldset>
          <legend>What it starts</legend>
          <Choice name="automation-target" checked={targetType === 'new_session'} onChange={() => setTargetType('new_session')} label="A new session of a saved agent, each time" />
          <Choice name="automation-target" checked={targetType === 'existing_session'} onChange={() => setTargetType('existing_session')} label="A message to one of your existing sessions" />
        </fieldset>
        {targetType === 'new_session' ? (
          <>
            <Field id="automation-agent-id" label="Agent" error={errors.agent_id ?? (agents.isError ? `The agents did not load. ${problem(agents.error)}` : undefined)}>
              <select id="automation-agent-id" value={chosenAgent} onChange={(e) => setAgentId(e.target.value)} disabled={agentList.length === 0} {...invalid('automation-agent-id', errors.agent_id)}>
                {agentList.length === 0 && <option value="">{agents.isPending ? 'Loading agents…' : 'No agent is visible to this key'}</option>}
                {agentList.map((agent) => (
                  <option key={agent.id} value={agent.id}>
                    {agent.name} ({agent.id})
                  </option>
                ))}
              </select>
            </Field>
            <Field id="automation-message" label="First message" error={errors.message}>
              <textarea id="automation-message" rows={3} value={message} onChange={(e) => setMessage(e.target.value)} {...invalid('automation-message', errors.message)} />
            </Field>
          </>
        ) : (
          <>
            <Field id="automation-session-id" label="Session id" error={errors.session_id}>
              <input id="automation-session-id" value={sessionId} onChange={(e) => setSessionId(e.target.value)} spellCheck={false} autoComplete="off" className="mono" {...invalid('automation-session-id', errors.session_id)} />
            </Field>
            <Field id="automation-instructions" label="Instructions" error={errors.instructions} hint="Sent to the session as a user message each time.">
              <textarea id="automation-instructions" rows={3} value={instructions} onChange={(e) => setInstructions(e.target.value)} {...invalid('automation-instructions', errors.instructions, true)} />
            </Field>
          </>
        )}
        <div className="policy-row">
          <Field id="automation-overlap" label="If the previous run is still going" hint={OVERLAP_HELP[overlap]}>
            <select id="automation-overlap" value={overlap} onChange={(e) => setOverlap(e.target.value as OverlapPolicy)} aria-describedby="automation-overlap-hint">
              {OVERLAP_POLICIES.map((policy) => (
                <option key={policy} value={policy}>
                  {statusText(policy)}
                </option>
              ))}
            </select>
          </Field>
          <Field id="automation-catch-up" label="Times missed while the service was down" hint={CATCH_UP_HELP[catchUp]}>
            <select id="automation-catch-up" value={catchUp} onChange={(e) => setCatchUp(e.target.value as CatchUpPolicy)} aria-describedby="automation-catch-up-hint">
              {CATCH_UP_POLICIES.map((policy) => (
                <option key={policy} value={policy}>
                  {policy === 'none' ? 'fire none' : policy === 'latest' ? 'fire the latest' : 'fire all'}
                </option>
              ))}
            </select>
          </Field>
        </div>
        {formError && (
          <p role="alert" className="error">
            {formError}
          </p>
        )}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create automation'}
          </button>
          <button type="button" onClick={onCancel} disabled={busy}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}

/** The next five fire times as the server computes them (the zone's daylight saving included), or why there are none. */
function Preview({ preview, timezone, fieldProblem }: { preview: { data?: { next_run_times: number[] }; isFetching: boolean; isError: boolean; error: unknown }; timezone: string; fieldProblem: boolean }) {
  const times = preview.data?.next_run_times ?? [];
  const failed = preview.isError && !fieldProblem;
  return (
    <section className="preview" aria-labelledby="automation-preview-title" aria-live="polite" aria-busy={preview.isFetching}>
      <h3 id="automation-preview-title">Next five times</h3>
      {failed ? (
        <p className="error">No preview. {problem(preview.error)}</p>
      ) : fieldProblem ? (
        <p className="muted small">No times: correct the schedule (the problem is shown under its field).</p>
      ) : times.length > 0 ? (
        <ol aria-label="Next five fire times">
          {times.map((at) => (
            <li key={at}>
              <time dateTime={new Date(at * 1000).toISOString()}>{inZone(at, timezone)}</time>
            </li>
          ))}
        </ol>
      ) : (
        <p className="muted small">{preview.isFetching ? 'Computing…' : 'Enter an expression and a time zone.'}</p>
      )}
    </section>
  );
}

/** aria-invalid and aria-describedby of an input, pointing at its error (and its hint when it has one). */
function invalid(id: string, error: string | undefined, hasHint = false) {
  const describedBy = [hasHint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return { 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy || undefined };
}

function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: string; error?: string; children: ReactNode }) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children}
      {hint && (
        <p id={`${id}-hint`} className="muted hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="error">
          {error}
        </p>
      )}
    </div>
  );
}

function Choice({ name, checked, onChange, label }: { name: string; checked: boolean; onChange: () => void; label: string }) {
  return (
    <label className="choice">
      <input type="radio" name={name} checked={checked} onChange={onChange} /> {label}
    </label>
  );
}
