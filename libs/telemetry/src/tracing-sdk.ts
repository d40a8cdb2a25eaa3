import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { currentSpanSink, SESSION_ATTRIBUTE } from './span-sink.js';
import { takeSpanIdHint } from './tracing.js';
import type { TracingRole, TracingSettings } from './tracing-settings.js';

/**
 * The OpenTelemetry SDK as this server configures it, loaded (dynamic import) only when tracing is
 * on. The standard variables do the rest: the exporters read OTEL_EXPORTER_OTLP_* (endpoint,
 * headers, timeout, compression), the provider OTEL_TRACES_SAMPLER(_ARG) and the span limits, the
 * batch processors OTEL_BSP_*, the resource OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
 */
export function installTracerProvider(settings: TracingSettings, role: TracingRole): BasicTracerProvider {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, 'service.namespace': 'yuxi', 'yuxi.process.role': role }))
    .merge(detectResources({ detectors: [envDetector] }));
  const spanProcessors: SpanProcessor[] = [new BatchSpanProcessor(new SessionSpanExporter())];
  if (settings.exporter === 'http/protobuf') spanProcessors.push(new BatchSpanProcessor(new OtlpProtobufExporter()));
  if (settings.exporter === 'http/json') spanProcessors.push(new BatchSpanProcessor(new OtlpJsonExporter()));
  const provider = new BasicTracerProvider({ resource, idGenerator: new HintedIdGenerator(), spanProcessors });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return provider;
}

/** Random ids, but for a span started with a fixed id (`SpanOptions.spanId`). */
class HintedIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  generateTraceId(): string {
    return this.random.generateTraceId();
  }
  generateSpanId(): string {
    return takeSpanIdHint() ?? this.random.generateSpanId();
  }
}

/** Hands the spans of sessions to the registered span store (span-sink.ts), batched like any exporter. */
class SessionSpanExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const sink = currentSpanSink();
    const kept = sink ? spans.filter((span) => typeof span.attributes[SESSION_ATTRIBUTE] === 'string') : [];
    if (!sink || kept.length === 0) return done({ code: ExportResultCode.SUCCESS });
    sink.write(kept).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: unknown) => done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
    );
  }
  async shutdown(): Promise<void> {}
  async forceFlush(): Promise<void> {}
}
