import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { http } from '../support/http.js';

// The files surface is documented: operations, schemas, error codes.
describe('files: OpenAPI', () => {
  it('documents every files operation under the files tag, with its bodies, schemas and error codes', async () => {
    const spec = (await http('/openapi.json', { key: null })).body;
    const op = (path: string, method: string) => spec.paths[path]?.[method];
    const operations: [string, string, string, string[]][] = [
      ['/api/v1/agents/files', 'post', 'uploadFile', ['201', '413', '415', '422']],
      ['/api/v1/agents/files/{file_id}', 'get', 'getFile', ['200', '404', '409']],
      ['/api/v1/agents/files/{file_id}', 'delete', 'deleteFile', ['200', '404', '409']],
      ['/api/v1/agents/sessions/{session_id}/attachments', 'get', 'listAttachments', ['200', '400', '404']],
      ['/api/v1/agents/sessions/{session_id}/attachments/{file_id}', 'delete', 'deleteAttachment', ['200', '404', '409']],
      ['/api/v1/agents/sessions/{session_id}/files/{file_id}/content', 'get', 'getSessionFileContent', ['200', '404', '409']],
    ];
    for (const [path, method, operationId, statuses] of operations) {
      const operation = op(path, method);
      assert.ok(operation, `${method.toUpperCase()} ${path} is documented`);
      assert.equal(operation.operationId, operationId);
      assert.ok(operation.tags.includes('files'), `${operationId} is tagged files`);
      assert.ok(operation.description, `${operationId} has a description`);
      for (const status of statuses) assert.ok(operation.responses[status], `${operationId} documents ${status}`);
    }
    assert.ok(spec.tags.some((tag: any) => tag.name === 'files' && tag.description));
    const upload = op('/api/v1/agents/files', 'post');
    assert.deepEqual(upload.requestBody.content['multipart/form-data'].schema.required, ['file']);
    assert.match(upload.responses['413'].description, /file_too_large/);
    assert.match(upload.responses['415'].description, /file_type_not_allowed/);
    assert.match(upload.responses['422'].description, /file_type_mismatch/);
    const content = op('/api/v1/agents/sessions/{session_id}/files/{file_id}/content', 'get').responses['200'].content;
    for (const type of ['image/png', 'application/pdf', 'text/markdown']) assert.equal(content[type].schema.format, 'binary', `${type} is declared`);

    const schemas = spec.components.schemas;
    for (const name of ['FileDto', 'FileDeletedDto', 'AttachmentDto', 'AttachmentListDto', 'AttachmentDeletedDto']) assert.ok(schemas[name], `${name} is a schema`);
    assert.deepEqual(schemas.FileDto.properties.status.enum, ['draft']);
    assert.deepEqual(schemas.AttachmentDto.properties.status.enum, ['preparing', 'ready']);
    assert.equal(schemas.InputDto.properties.attachments.items.$ref, '#/components/schemas/AttachmentDto');
    assert.deepEqual(schemas.InputDto.properties.attachment_status.enum, ['ready', 'preparing']);
    for (const dto of ['CreateSessionYuxiDto', 'MessageEventYuxiDto']) {
      const ids = schemas[dto].properties.attachment_file_ids;
      assert.equal(ids.maxItems, 20, dto);
      assert.equal(ids.items.pattern, '^[0-9a-f]{32}$', dto);
    }
    for (const code of ['file_too_large', 'file_quota_exceeded', 'file_type_not_allowed', 'file_type_mismatch', 'file_already_bound', 'attachment_busy', 'file_not_ready']) {
      assert.ok(schemas.ErrorCode.enum.includes(code), `${code} is in the catalogue`);
    }
    assert.match(JSON.stringify(op('/api/v1/agents/sessions/{session_id}/events', 'post').responses['409']), /file_already_bound/);
    assert.deepEqual(schemas.BuiltinToolDto.properties.name.enum, ['ask_user', 'calculator', 'current_time', 'list_files', 'read_file', 'ocr_parse_file', 'web_search']);
  });
});
