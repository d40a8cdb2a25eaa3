export { flushTracing, startTracing, stopTracing } from './start-tracing.js';
export { endRequestSpan, httpMethodAttribute, MAX_URL_PATH_LENGTH, type RequestOutcome, requestSpanName, sessionIdOfRoute, tracesRequestPath } from './request-span.js';
export { currentSpanSink, type ReadableSpan, RUN_ATTRIBUTE, SESSION_ATTRIBUTE, setSpanSink, type SpanSink, TURN_ATTRIBUTE } from './span-sink.js';
export {
  type Attributes,
  captureMessageContent,
  type Context,
  contextOf,
  currentSpanId,
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
  setSpanAttributes,
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
