import { useEffect, useRef } from 'react';
import { duration } from '../format.js';
import './environment.css';
import type { CommandExecutionItem } from './environment.js';

/** What a command's status badge says, and its colour class. */
const STATUSES: Record<CommandExecutionItem['status'], { text: string; tone: string }> = {
  in_progress: { text: 'running', tone: 'running' },
  completed: { text: 'completed', tone: 'ok' },
  incomplete: { text: 'incomplete', tone: 'warn' },
  failed: { text: 'failed', tone: 'bad' },
};

/**
 * One `shell` call as a terminal: the command, where it ran, its status, exit code and duration,
 * and its output (rendered as text, never as markup; scrolls inside a bounded box). `live` is the
 * output streamed while the command runs (from the stream's start, so all of it): shown instead of
 * the persisted output while it holds more.
 */
export function CommandBlock({ command, live }: { command: CommandExecutionItem; live?: string }) {
  const status = STATUSES[command.status];
  const running = command.status === 'in_progress';
  const output = live !== undefined && live.length >= command.output.length ? live : command.output;
  const exit =
    command.exit_code !== null
      ? `exit code ${command.exit_code}`
      : running
        ? null
        : // No exit code once finished: a limit or a signal ended it, or it never ran (the output says which).
          'no exit code';
  const failedExit = command.exit_code !== null && command.exit_code !== 0;
  return (
    <figure className="command" aria-label={`Command: ${command.command}`}>
      <figcaption className="command-head">
        <span className={`badge badge-${status.tone}`}>{status.text}</span>
        {exit && <span className={failedExit || command.exit_code === null ? 'command-exit bad' : 'command-exit'}>{exit}</span>}
        {command.duration_ms !== null && <span className="muted">{duration(command.duration_ms)}</span>}
        {command.cwd && <span className="muted command-cwd">in {command.cwd}</span>}
      </figcaption>
      <pre className="command-line">
        <span aria-hidden="true" className="prompt">
          ${' '}
        </span>
        {command.command}
      </pre>
      <Output text={output} running={running} label={`Output of ${command.command}`} />
    </figure>
  );
}

/** The output box: scrollable (and focusable, so the keyboard scrolls it); kept at its end while output streams in. */
function Output({ text, running, label }: { text: string; running: boolean; label: string }) {
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const element = box.current;
    if (running && element) element.scrollTop = element.scrollHeight;
  }, [text, running]);
  if (text === '') return <p className="muted command-empty">{running ? 'No output yet.' : 'No output.'}</p>;
  return (
    <pre ref={box} className="command-output" tabIndex={0} aria-label={label} aria-live={running ? 'polite' : undefined}>
      {text}
    </pre>
  );
}

/** A command running before its item is persisted: the item the stream announced, or only its id and output. */
export function LiveCommand({ itemId, text, command }: { itemId: string; text: string; command?: CommandExecutionItem }) {
  const shown = command ?? { id: itemId, type: 'command_execution' as const, command: '(a command)', cwd: '', exit_code: null, output: '', duration_ms: null, status: 'in_progress' as const };
  return <CommandBlock command={shown} live={text} />;
}

/** The command a `shell` call's arguments name, or null when they name none. */
export function shellCommandOf(argumentsJson: string): string | null {
  try {
    const args = JSON.parse(argumentsJson) as { command?: unknown };
    return typeof args.command === 'string' ? args.command : null;
  } catch {
    return null;
  }
}

/** A `shell` step of the timeline: the command and what the model read back, as a terminal (its exit code is on the command's item). */
export function ShellStep({ command, output }: { command: string; output: string | null }) {
  return (
    <figure className="command" aria-label={`Command: ${command}`}>
      <pre className="command-line">
        <span aria-hidden="true" className="prompt">
          ${' '}
        </span>
        {command}
      </pre>
      {output !== null && <Output text={output} running={false} label={`Output of ${command}`} />}
    </figure>
  );
}
