export { flushTracing, startTracing, stopTracing } from './start-tracing.js';
export { currentSpanSink, type ReadableSpan, RUN_ATTRIBUTE, SESSION_ATTRIBUTE, setSpanSink, type SpanSink, TURN_ATTRIBUTE } from './span-sink.js';
export {
  addSpanEvent,
  type Attributes,
  captureMessageContent,
  type Context,
  contextOf,
  currentTraceId,
  endSpan,
  extractHttpContext,
  injectTraceHeaders,
  inSpan,
  type Link,
  linkTo,
  MAX_TRACESTATE_LENGTH,
  recordError,
  runSpanId,
  type Span,
  SpanKind,
  type SpanOptions,
  startSpan,
  type StoredTraceContext,
  storedTraceContext,
  traceIdOf,
  tracingOn,
  withSpan,
} from './tracing.js';
export { type OtlpProtocol, type TracingRole, TracingSettingError, type TracingSettings, tracingSettings } from './tracing-settings.js';
