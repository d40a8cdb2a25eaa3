import { useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { AgentsClient, Session } from '#libs/sdk';

type Waitpoint = NonNullable<NonNullable<Session['yuxi']['current_turn']>['waitpoint']>;

/**
 * The open waitpoint of the session's turn, as a form: a textbox per question and `Submit answer`,
 * or `Approve` / `Reject` per tool call (the whole waitpoint is answered at once, as the API wants).
 */
export function WaitpointForm({ client, sessionId, session }: { client: AgentsClient; sessionId: string; session: Session }) {
  const queries = useQueryClient();
  const turn = session.yuxi.current_turn!;
  const waitpoint = turn.waitpoint as Waitpoint;
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const [decisions, setDecisions] = useState<Record<string, 'approve' | 'reject'>>({});
  const [error, setError] = useState<string | null>(null);
  const done = () => {
    void queries.invalidateQueries({ queryKey: ['session', sessionId] });
    void queries.invalidateQueries({ queryKey: ['items', sessionId] });
  };
  const fail = (caught: unknown) => setError(`Not accepted: ${String(caught)}. Reload the page to see the waitpoint as it is now.`);

  if (waitpoint.kind === 'question') {
    const questions = waitpoint.questions ?? [];
    const submit = (event: FormEvent) => {
      event.preventDefault();
      const response = { type: 'answer' as const, answers: questions.map((q) => ({ question_id: q.question_id, answer: answers[q.question_id] ?? '' })) };
      client.sessions.resume(sessionId, { turn_id: turn.id, waitpoint_id: waitpoint.id, response }).then(done, fail);
    };
    return (
      <form className="waitpoint" onSubmit={submit} aria-labelledby="waitpoint-title">
        <h2 id="waitpoint-title">The agent asks</h2>
        {questions.map((q) => (
          <div key={q.question_id} className="field">
            <label htmlFor={`q-${q.question_id}`}>{q.question}</label>
            <input id={`q-${q.question_id}`} value={answers[q.question_id] ?? ''} onChange={(e) => setAnswers({ ...answers, [q.question_id]: e.target.value })} required />
          </div>
        ))}
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit">Submit answer</button>
      </form>
    );
  }

  if (waitpoint.kind === 'approval') {
    const calls = waitpoint.tool_calls ?? [];
    const decide = (callId: string, decision: 'approve' | 'reject') => {
      const next = { ...decisions, [callId]: decision };
      setDecisions(next);
      if (calls.every((call) => next[call.call_id])) {
        const response = { type: 'approval' as const, decisions: calls.map((call) => ({ call_id: call.call_id, decision: next[call.call_id]! })) };
        client.sessions.resume(sessionId, { turn_id: turn.id, waitpoint_id: waitpoint.id, response }).then(done, fail);
      }
    };
    return (
      <section className="waitpoint" aria-labelledby="approval-title">
        <h2 id="approval-title">Approve tool calls</h2>
        <ul>
          {calls.map((call) => (
            <li key={call.call_id}>
              <p>
                <strong>{call.name}</strong>
              </p>
              <pre>{call.arguments}</pre>
              <button type="button" onClick={() => decide(call.call_id, 'approve')} aria-pressed={decisions[call.call_id] === 'approve'}>
                Approve
              </button>{' '}
              <button type="button" className="danger" onClick={() => decide(call.call_id, 'reject')} aria-pressed={decisions[call.call_id] === 'reject'}>
                Reject
              </button>
            </li>
          ))}
        </ul>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
      </section>
    );
  }

  return (
    <section className="waitpoint" aria-labelledby="client-tool-title">
      <h2 id="client-tool-title">Waiting for a client tool result</h2>
      <p className="muted">The integrating application answers this waitpoint with `tool_result`.</p>
    </section>
  );
}
