import { env } from './env.js';
import { API, type HttpResult } from './http.js';

export interface UploadOptions {
  /** Bearer credential (default: the suite's key). */
  token?: string;
  baseUrl?: string;
  /** The part's Content-Type, which the server must ignore. */
  contentType?: string;
  field?: string;
  /** X-End-User-Id, for a key bound to an app. */
  endUserId?: string;
  /** Idempotency-Key of the upload. */
  idempotencyKey?: string;
}

/** POST /files with one multipart part, as a browser or curl -F would send it. */
export async function upload(bytes: Uint8Array | string, filename: string, options: UploadOptions = {}): Promise<HttpResult> {
  const form = new FormData();
  const data = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  form.append(options.field ?? 'file', new Blob([data], { type: options.contentType ?? 'application/octet-stream' }), filename);
  const res = await fetch(`${options.baseUrl ?? env.apiUrl}${API}/files`, { method: 'POST', headers: {
      authorization: `Bearer ${options.token ?? env.apiKey}`,
      ...(options.endUserId ? { 'x-end-user-id': options.endUserId } : {}),
      ...(options.idempotencyKey !== undefined ? { 'idempotency-key': options.idempotencyKey } : {}),
    }, body: form });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** Uploads and fails the test unless 201; the draft. */
export async function uploadDraft(bytes: Uint8Array | string, filename: string, options: UploadOptions = {}): Promise<any> {
  const res = await upload(bytes, filename, options);
  if (res.status !== 201) throw new Error(`upload of ${filename} failed: ${res.status} ${res.text}`);
  return res.body;
}

export { executableBytes, PNG, pdfWithText, pngBomb, randomPng, scannedPdf } from './file-fixtures.js';
