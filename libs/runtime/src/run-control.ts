import type { RunSignals } from '#libs/queue';
import { TurnCancelledError } from './run-errors.js';

/** The abort switch of one turn on this worker and the cancel subscriptions of its runs. */
export class RunControl {
  readonly abort = new AbortController();
  private readonly stops: (() => void)[] = [];

  async listen(signals: RunSignals, runId: string): Promise<void> {
    this.stops.push(await signals.onCancel(runId, () => this.abort.abort(new TurnCancelledError())));
  }

  stopListening(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}
