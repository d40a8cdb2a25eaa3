import { type FormEvent, useState } from 'react';
import type { ControlEvent, Receipt, Waitpoint } from '#libs/sdk';
import { when } from '../format.js';

type Send = (event: ControlEvent) => Promise<Receipt>;
type Question = NonNullable<Waitpoint['questions']>[number];
type ToolCall = NonNullable<Waitpoint['tool_calls']>[number];

interface Props {
  turnId: string;
  waitpoint: Waitpoint;
  /** Sends the event: through the owner's route, or the admin route for another owner's session. */
  send: Send;
  /** Why the caller may not answer (a viewer on another owner's session); null when it may. */
  readOnly: string | null;
  /** After an accepted answer: re-read the session. */
  onSent: () => void;
}

/** Arguments as the model wrote them, indented when they are JSON. */
function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

function describe(caught: unknown): string {
  return `Not accepted: ${caught instanceof Error ? caught.message : String(caught)}. The waitpoint may have been answered meanwhile: the page shows it as it is now.`;
}

/**
 * The open waitpoint of the session's turn, as forms: a textbox per question and `Submit answer`;
 * `Approve` / `Reject` per tool call of an approval (sent once every call is decided, as the API
 * takes the whole waitpoint at once); a result form per client tool call; a budget's reached
 * limit with `Approve` (once it has room again) / `Reject`.
 */
export function WaitpointForm(props: Props) {
  const { waitpoint, readOnly } = props;
  return (
    <section className="waitpoint" aria-labelledby="waitpoint-title">
      {waitpoint.kind === 'question' && <QuestionForm {...props} />}
      {waitpoint.kind === 'approval' && <ApprovalForm {...props} />}
      {waitpoint.kind === 'client_tool' && <ToolResultForms {...props} />}
      {(waitpoint.kind as string) === 'budget' && <BudgetForm {...props} />}
      {waitpoint.kind === 'cooperation' && (
        <>
          <h2 id="waitpoint-title">Waiting for its members</h2>
          <p className="muted">The coordinator waits for the members it started; nothing is asked of anyone. It continues once they settle.</p>
        </>
      )}
      <p className="muted">Waiting since {when(waitpoint.created_at)}.</p>
      {readOnly && <p className="note">{readOnly}</p>}
    </section>
  );
}

function QuestionForm({ turnId, waitpoint, send, readOnly, onSent }: Props) {
  const questions = waitpoint.questions ?? [];
  const [answers, setAnswers] = useState<Record<string, string | string[]>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const response = { type: 'answer' as const, answers: questions.map((q) => ({ question_id: q.question_id, answer: answers[q.question_id] ?? (q.multi_select ? [] : '') })) };
    send({ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpoint.id, response }).then(onSent, (caught: unknown) => {
      setError(describe(caught));
      setBusy(false);
    });
  };
  return (
    <form onSubmit={submit} aria-labelledby="waitpoint-title">
      <h2 id="waitpoint-title">The agent asks</h2>
      <fieldset disabled={readOnly !== null || busy}>
        {questions.map((q) => (
          <QuestionField key={q.question_id} question={q} value={answers[q.question_id]} onChange={(value) => setAnswers((current) => ({ ...current, [q.question_id]: value }))} />
        ))}
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit">Submit answer</button>
      </fieldset>
    </form>
  );
}

/** One question: a textbox (with the options offered as suggestions), or checkboxes where several options may be chosen. */
function QuestionField({ question, value, onChange }: { question: Question; value: string | string[] | undefined; onChange: (value: string | string[]) => void }) {
  const id = `q-${question.question_id}`;
  if (question.multi_select && question.options.length > 0) {
    const chosen = Array.isArray(value) ? value : [];
    return (
      <fieldset className="field">
        <legend>{question.question}</legend>
        {question.options.map((option, index) => (
          <div key={option} className="field-check">
            <input
              id={`${id}-${index}`}
              type="checkbox"
              checked={chosen.includes(option)}
              onChange={(e) => onChange(e.target.checked ? [...chosen, option] : chosen.filter((other) => other !== option))}
            />
            <label htmlFor={`${id}-${index}`}>{option}</label>
          </div>
        ))}
      </fieldset>
    );
  }
  if (question.options.length > 0 && !question.allow_other) {
    return (
      <div className="field">
        <label htmlFor={id}>{question.question}</label>
        <select id={id} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.target.value)} required>
          <option value="" disabled>
            Choose an answer
          </option>
          {question.options.map((option) => (
            <option key={option}>{option}</option>
          ))}
        </select>
      </div>
    );
  }
  return (
    <div className="field">
      <label htmlFor={id}>{question.question}</label>
      <input id={id} value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.target.value)} list={question.options.length > 0 ? `${id}-options` : undefined} required />
      {question.options.length > 0 && (
        <datalist id={`${id}-options`}>
          {question.options.map((option) => (
            <option key={option} value={option} />
          ))}
        </datalist>
      )}
    </div>
  );
}

function ApprovalForm({ turnId, waitpoint, send, readOnly, onSent }: Props) {
  const calls = waitpoint.tool_calls ?? [];
  const [decisions, setDecisions] = useState<Record<string, 'approve' | 'reject'>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = (callId: string, decision: 'approve' | 'reject') => {
    const next = { ...decisions, [callId]: decision };
    setDecisions(next);
    if (!calls.every((call) => next[call.call_id])) return;
    setBusy(true);
    setError(null);
    const response = { type: 'approval' as const, decisions: calls.map((call) => ({ call_id: call.call_id, decision: next[call.call_id]! })) };
    send({ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpoint.id, response }).then(onSent, (caught: unknown) => {
      setError(describe(caught));
      setBusy(false);
    });
  };
  const decided = Object.keys(decisions).length;
  return (
    <>
      <h2 id="waitpoint-title">Approve tool calls</h2>
      {calls.length > 1 && (
        <p className="muted" role="status">
          {decided} of {calls.length} calls decided; the decisions are sent once every call has one.
        </p>
      )}
      <ul className="calls">
        {calls.map((call) => (
          <li key={call.call_id}>
            <p>
              <strong>{call.name}</strong> <span className="muted">({call.call_id})</span>
            </p>
            <pre>{pretty(call.arguments)}</pre>
            <div className="actions">
              <button type="button" onClick={() => decide(call.call_id, 'approve')} aria-pressed={decisions[call.call_id] === 'approve'} disabled={readOnly !== null || busy}>
                Approve
              </button>
              <button type="button" className="danger" onClick={() => decide(call.call_id, 'reject')} aria-pressed={decisions[call.call_id] === 'reject'} disabled={readOnly !== null || busy}>
                Reject
              </button>
            </div>
          </li>
        ))}
      </ul>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </>
  );
}

/** A budget waitpoint as the API shows it (its fields beyond the common ones). */
type BudgetWaitpoint = Waitpoint & { budget_id?: string; limit?: string; spent?: number };

/** A budget without room: approve goes on once it has room again (raised, or its period rolled over; else not accepted), reject fails the turn. */
function BudgetForm({ turnId, waitpoint, send, readOnly, onSent }: Props) {
  const budget = waitpoint as BudgetWaitpoint;
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = (decision: 'approve' | 'reject') => {
    setBusy(true);
    setError(null);
    const response = { type: 'approval' as const, decisions: [{ call_id: 'budget', decision }] };
    send({ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpoint.id, response }).then(onSent, (caught: unknown) => {
      setError(`Not accepted: ${caught instanceof Error ? caught.message : String(caught)}. Approving needs room in the budget: raise its limit first.`);
      setBusy(false);
    });
  };
  return (
    <>
      <h2 id="waitpoint-title">Budget reached</h2>
      <dl className="facts">
        <dt>Budget</dt>
        <dd>{budget.budget_id}</dd>
        <dt>Limit</dt>
        <dd>{budget.limit}</dd>
        <dt>Spent</dt>
        <dd>{budget.spent}</dd>
      </dl>
      <div className="actions">
        <button type="button" onClick={() => decide('approve')} disabled={readOnly !== null || busy}>
          Approve
        </button>
        <button type="button" className="danger" onClick={() => decide('reject')} disabled={readOnly !== null || busy}>
          Reject
        </button>
      </div>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </>
  );
}

function ToolResultForms(props: Props) {
  const calls = props.waitpoint.tool_calls ?? [];
  return (
    <>
      <h2 id="waitpoint-title">Waiting for client tool results</h2>
      <p className="muted">The integrating application normally sends these; an operator can send a result in its place.</p>
      {calls.map((call) => (
        <ToolResultForm key={call.call_id} call={call} {...props} />
      ))}
    </>
  );
}

function ToolResultForm({ call, turnId, send, readOnly, onSent }: Props & { call: ToolCall }) {
  const [output, setOutput] = useState('');
  const [failed, setFailed] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState(false);
  const [busy, setBusy] = useState(false);
  const id = `result-${call.call_id}`;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    send({ type: 'tool_result', turn_id: turnId, call_id: call.call_id, success: !failed, output }).then(
      () => {
        setSent(true);
        setBusy(false);
        onSent();
      },
      (caught: unknown) => {
        setError(describe(caught));
        setBusy(false);
      },
    );
  };
  return (
    <form onSubmit={submit} className="tool-result" aria-label={`Client tool call ${call.name} (${call.call_id})`}>
      <p className="label">Arguments</p>
      <pre>{pretty(call.arguments)}</pre>
      <fieldset disabled={readOnly !== null || busy || sent}>
        <div className="field">
          <label htmlFor={id}>{`Result of ${call.name}`}</label>
          <textarea id={id} value={output} onChange={(e) => setOutput(e.target.value)} rows={3} />
        </div>
        <div className="field-check">
          <input id={`${id}-failed`} type="checkbox" checked={failed} onChange={(e) => setFailed(e.target.checked)} />
          <label htmlFor={`${id}-failed`}>The call failed (the result says why)</label>
        </div>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit">{sent ? 'Result sent' : 'Send result'}</button>
      </fieldset>
    </form>
  );
}
