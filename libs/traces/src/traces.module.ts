import { Module } from '@nestjs/common';
import { SessionSpansRepository } from './session-spans.repository.js';
import { SessionTraces } from './session-traces.js';
import { SpanRetention } from './span-retention.js';
import { SpanStoreWriter } from './span-store-writer.js';

/**
 * Spans kept per session (`session_spans`): the span store the SDK writes to while tracing is on
 * (both apps), the reads of the traces route (api) and retention (the worker's sweep).
 */
@Module({ providers: [SessionSpansRepository, SpanStoreWriter, SessionTraces, SpanRetention], exports: [SessionTraces, SpanRetention] })
export class TracesModule {}
