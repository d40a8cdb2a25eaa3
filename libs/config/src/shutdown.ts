import type { INestApplicationContext } from '@nestjs/common';
import { stopTracing } from '#libs/telemetry';

/**
 * Closes the application on SIGTERM/SIGINT and exits with code 0, so lifecycle hooks run, the exit
 * is clean for orchestrators, and exit-time tooling (--cpu-prof) gets to write its output.
 * (Nest's enableShutdownHooks re-raises the signal after closing instead.)
 */
export function closeOnSignals(app: INestApplicationContext, onClose: () => void = () => undefined, deadlineMs = shutdownDeadlineMs()): void {
  let closing = false;
  const close = (): void => {
    if (closing) return;
    closing = true;
    // Whatever hangs the close (a dependency that never answers during an outage) must not outlive
    // the orchestrator's grace period: exit non-zero before it would SIGKILL us.
    setTimeout(() => {
      console.error(`shutdown did not finish within ${deadlineMs} ms; exiting`);
      process.exit(1);
    }, deadlineMs).unref();
    onClose();
    // Once the application closed (its last spans ended), the spans still buffered are exported
    // before the exit: a no-op when tracing is off; bounded by the exporter's timeout and the deadline above.
    app.close().then(
      () => stopTracing().then(() => process.exit(0)),
      (error: unknown) => {
        console.error(error);
        return stopTracing().then(() => process.exit(1));
      },
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
}

/** SHUTDOWN_TIMEOUT_MS (default 25 s: inside the 30 s grace period the deployment files give). */
function shutdownDeadlineMs(): number {
  const value = Number(process.env.SHUTDOWN_TIMEOUT_MS ?? '');
  return Number.isInteger(value) && value > 0 ? value : 25_000;
}
