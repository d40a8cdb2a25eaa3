export { capSpan, groupSpans, MAX_SPAN_BYTES, type OtlpSpan, type OtlpTraceRequest, type SpanOfTrace, type StoredSpan, storable, storedSpansOf, TRUNCATED_ATTRIBUTE } from './otlp-json.js';
export { SessionSpansRepository, SPAN_DELETE_BATCH } from './session-spans.repository.js';
export { SessionTraces } from './session-traces.js';
export { SPAN_DELETE_BATCHES_PER_TICK, SPAN_RETENTION_OFF_PAUSE_MS, SPAN_RETENTION_ON_PAUSE_MS, SpanRetention } from './span-retention.js';
export { SpanStoreWriter } from './span-store-writer.js';
export { cutTracePage, MAX_TRACES_RESPONSE_BYTES, type SpanRowOfPage, type TracedTurn } from './trace-page.js';
export { SessionTraceDto, SessionTraceExtensionsDto, SessionTraceListDto } from './trace.dto.js';
export { TracesModule } from './traces.module.js';
