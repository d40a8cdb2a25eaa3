import { markTracingStarted } from './tracing.js';
import { type TracingRole, tracingSettings } from './tracing-settings.js';

let provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> } | null = null;

/**
 * Starts tracing for this process when the settings say so (tracing-settings.ts), before the
 * application is created. Off, the SDK is never loaded. Returns whether tracing is on.
 */
export async function startTracing(role: TracingRole, env: Record<string, string | undefined> = process.env): Promise<boolean> {
  const settings = tracingSettings(env, role);
  if (!settings.enabled || provider) return provider !== null;
  const { installTracerProvider } = await import('./tracing-sdk.js');
  provider = installTracerProvider(settings, role);
  markTracingStarted(settings);
  return true;
}

/** Exports what is buffered (at shutdown, after the application closed); bounded by the exporters' own timeouts. */
export async function stopTracing(): Promise<void> {
  const current = provider;
  provider = null;
  await current?.shutdown().catch(() => undefined);
}

/** Exports what is buffered now (tests, before reading a receiver). */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush().catch(() => undefined);
}
