import { type BeforeApplicationShutdown, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import { currentSpanSink, flushTracing, type ReadableSpan, setSpanSink, type SpanSink, tracingOn } from '#libs/telemetry';
import { type OtlpTraceRequest, storedSpansOf } from './otlp-json.js';
import { SessionSpansRepository } from './session-spans.repository.js';

/** How long a shutdown waits for the spans still buffered to reach the store (the exporters' own timeouts are longer). */
const SHUTDOWN_FLUSH_MS = 2_000;

type Serialize = (spans: ReadableSpan[]) => Uint8Array;

/**
 * The per-session span store: the SDK's batch processor hands it the spans that name a session
 * (span-sink.ts); it writes them to `session_spans` in their OTLP JSON encoding, one statement a
 * batch. Registered only while tracing is on; off, nothing here runs and the serializer is never
 * loaded. A failed write drops its batch and is logged (once per interval): traces are
 * diagnostics, never a reason to slow or fail a turn.
 */
@Injectable()
export class SpanStoreWriter implements SpanSink, OnModuleInit, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly failures = new ThrottledLog(new Logger('SpanStore'));
  private serialize: Serialize | null = null;

  constructor(private readonly spans: SessionSpansRepository) {}

  async onModuleInit(): Promise<void> {
    if (!tracingOn()) return;
    // The serializer the OTLP/HTTP JSON exporter uses: ids hex, times unix-nano strings, AnyValue attributes.
    const { JsonTraceSerializer } = await import('@opentelemetry/otlp-transformer');
    this.serialize = (spans) => JsonTraceSerializer.serializeRequest(spans) ?? new Uint8Array();
    setSpanSink(this);
  }

  /** The spans still buffered go to the store while the database is open (bounded: a shutdown never waits long on traces). */
  async beforeApplicationShutdown(): Promise<void> {
    if (currentSpanSink() !== this) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([flushTracing(), new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS)))]);
    clearTimeout(timer);
  }

  onModuleDestroy(): void {
    if (currentSpanSink() === this) setSpanSink(null);
  }

  async write(spans: readonly ReadableSpan[]): Promise<void> {
    if (this.serialize === null || spans.length === 0) return;
    try {
      const request = JSON.parse(Buffer.from(this.serialize([...spans])).toString('utf8')) as OtlpTraceRequest;
      await this.spans.insert(storedSpansOf(request));
    } catch (error) {
      this.failures.warn(`span store: a batch of ${spans.length} spans was dropped: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
