/**
 * Whether this process traces, and where its spans go, from the standard OpenTelemetry variables
 * (plus TRACING, this server's one switch). Pure: read once at start by `startTracing`.
 *
 * - TRACING=auto (default): on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), exporting there.
 * - TRACING=on: on without a collector too (spans kept per session only, read through
 *   GET /sessions/{id}/traces); exporting as well when an endpoint is set.
 * - TRACING=off, or OTEL_SDK_DISABLED=true: off; nothing is created, stored or sent.
 * OTEL_TRACES_EXPORTER=none keeps tracing on (per the switch) but exports nothing.
 */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TracingSettings {
  enabled: boolean;
  /** null: spans are kept per session only (TRACING=on with no endpoint, or OTEL_TRACES_EXPORTER=none). */
  exporter: OtlpProtocol | null;
  /** OTEL_SERVICE_NAME, else `yuxi-api` / `yuxi-worker`. */
  serviceName: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, completions and tool arguments on spans. */
  captureContent: boolean;
}

export type TracingRole = 'api' | 'worker';

type Env = Record<string, string | undefined>;

/** A refused value, named (startup refuses to run with it, like every other setting). */
export class TracingSettingError extends Error {}

export function tracingSettings(env: Env, role: TracingRole): TracingSettings {
  const value = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const mode = (value('TRACING') ?? 'auto').toLowerCase();
  if (!['auto', 'on', 'off'].includes(mode)) throw new TracingSettingError(`TRACING must be auto, on or off (got ${JSON.stringify(mode)})`);
  const endpoint = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? value('OTEL_EXPORTER_OTLP_ENDPOINT');
  const disabled = value('OTEL_SDK_DISABLED')?.toLowerCase() === 'true';
  const enabled = !disabled && (mode === 'on' || (mode === 'auto' && endpoint !== undefined));
  const protocol = (value('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? value('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf').toLowerCase();
  if (enabled && protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new TracingSettingError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (got ${JSON.stringify(protocol)}; grpc is not built in)`);
  }
  const exporterKind = (value('OTEL_TRACES_EXPORTER') ?? 'otlp').toLowerCase();
  const exporter = enabled && endpoint !== undefined && exporterKind !== 'none' ? (protocol as OtlpProtocol) : null;
  return {
    enabled,
    exporter,
    serviceName: value('OTEL_SERVICE_NAME') ?? `yuxi-${role}`,
    captureContent: value('OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT')?.toLowerCase() === 'true',
  };
}
