import type { INestApplicationContext } from '@nestjs/common';

/**
 * Closes the application on SIGTERM/SIGINT and exits with code 0, so lifecycle hooks run, the exit
 * is clean for orchestrators, and exit-time tooling (--cpu-prof) gets to write its output.
 * (Nest's enableShutdownHooks re-raises the signal after closing instead.)
 */
export function closeOnSignals(app: INestApplicationContext, onClose: () => void = () => undefined): void {
  let closing = false;
  const close = (): void => {
    if (closing) return;
    closing = true;
    onClose();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
}
