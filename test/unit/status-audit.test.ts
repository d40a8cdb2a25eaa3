import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DocumentLike, mergeSamples, type StatusSample, statusSamples, toPathTemplate, undeclaredStatuses } from '../support/status-audit.js';

// The rules of the status audit that `npm test` runs after the suite (scripts/test.mjs).

const DOCUMENT: DocumentLike = {
  paths: {
    '/api/v1/agents/sessions': { get: { responses: { '200': {}, '401': {} } }, post: { responses: { '201': {}, '422': {} } } },
    '/api/v1/agents/sessions/{session_id}': { get: { responses: { '200': {}, '404': {}, '500': {}, '503': {} } } },
    '/health/ready': { get: { responses: { '200': {}, '503': {} } } },
  },
};

function sample(method: string, route: string, status: string, count = 1): StatusSample {
  return { method, route, status, count };
}

function reasons(...samples: StatusSample[]): string[] {
  return undeclaredStatuses(DOCUMENT, samples).map((f) => `${f.method} ${f.route} ${f.status}`);
}

describe('status audit', () => {
  it('maps Express route patterns to the document path templates', () => {
    assert.equal(toPathTemplate('/api/v1/agents/sessions/:session_id/turns/:turn_id/items'), '/api/v1/agents/sessions/{session_id}/turns/{turn_id}/items');
    assert.equal(toPathTemplate('/health'), '/health');
  });

  it('reads the request counter of a scrape, with its labels', () => {
    const text = [
      '# TYPE yuxi_http_requests_total counter',
      'yuxi_http_requests_total{method="GET",route="/api/v1/agents/sessions/:session_id",status="404",app="api"} 3',
      'yuxi_http_request_duration_seconds_count{method="GET",route="/health",status="200",app="api"} 9',
    ].join('\n');
    assert.deepEqual(statusSamples(text), [sample('GET', '/api/v1/agents/sessions/:session_id', '404', 3)]);
  });

  it('sums the replicas per method, route and status', () => {
    const merged = mergeSamples([sample('GET', '/health', '200', 2)], [sample('GET', '/health', '200', 3), sample('GET', '/health', '503', 1)]);
    assert.deepEqual(merged, [sample('GET', '/health', '200', 5), sample('GET', '/health', '503', 1)]);
  });

  it('accepts declared statuses (HEAD as GET) and flags the others with what is declared', () => {
    assert.deepEqual(reasons(sample('GET', '/api/v1/agents/sessions', '200'), sample('HEAD', '/api/v1/agents/sessions', '401'), sample('GET', '/health/ready', '503')), []);
    const findings = undeclaredStatuses(DOCUMENT, [sample('POST', '/api/v1/agents/sessions', '415', 4)]);
    assert.equal(findings.length, 1);
    assert.equal(findings[0]!.count, 4);
    assert.match(findings[0]!.reason, /not declared \(declared: 201, 422\)/);
  });

  it('flags every 5xx but 503, declared or not', () => {
    assert.deepEqual(reasons(sample('GET', '/api/v1/agents/sessions/:session_id', '500'), sample('GET', '/api/v1/agents/sessions/:session_id', '503')), [
      'GET /api/v1/agents/sessions/:session_id 500',
    ]);
  });

  it('flags routes the document lacks, but not the document itself, Swagger UI, unknown routes and wrong methods', () => {
    assert.deepEqual(reasons(sample('GET', '/api/v1/secret', '200')), ['GET /api/v1/secret 200']);
    assert.deepEqual(
      reasons(
        sample('GET', '/openapi.json', '200'),
        sample('GET', '/docs/swagger-ui-init.js', '200'),
        sample('GET', 'unmatched', '404'),
        sample('POST', 'unmatched', '401'),
        sample('DELETE', '/api/v1/agents/sessions', '405'),
        sample('OPTIONS', '/api/v1/agents/sessions/:session_id', '405'),
        sample('DELETE', '/api/v1/agents/sessions/:session_id', '401'),
      ),
      [],
    );
    assert.deepEqual(reasons(sample('GET', 'unmatched', '409'), sample('DELETE', '/api/v1/agents/sessions', '200'), sample('GET', '/openapi.json', '500')), [
      'DELETE /api/v1/agents/sessions 200',
      'GET /openapi.json 500',
      'GET unmatched 409',
    ]);
  });

  it('ignores requests whose client left before any answer (499)', () => {
    assert.deepEqual(reasons(sample('GET', '/api/v1/agents/sessions', '499')), []);
  });
});
