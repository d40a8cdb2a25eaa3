import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import { DomainError } from '#libs/errors';

/** The bounds stored images are held to: the account's file quota and a session's image bytes. */
export interface ImageQuota {
  /** FILE_QUOTA_BYTES: all stored files of the account (uploads, inline and tool images). */
  accountBytes: number;
  /** SESSION_IMAGE_BYTES: the inline and tool images of one session. */
  sessionBytes: number;
}

/**
 * Checks that `adding` more image bytes of `ownerId` fit its account's quota (the product user, or
 * the product user an app's end user belongs to, with all its end users) and the session's cap,
 * holding the account's files lock (the one uploads take, see FilesRepository.reserveUpload) until
 * the caller's transaction ends, so two stagings cannot both pass. `sessionId` null for a session
 * not created yet (its images are only this submission's). Throws 413 `file_quota_exceeded` or
 * `session_image_quota_exceeded` with the figures in `details`.
 */
export async function checkImageQuota(manager: EntityManager, ownerId: string, sessionId: string | null, adding: number, quota: ImageQuota): Promise<void> {
  const [owner] = (await manager.query(prepared(`SELECT CASE WHEN kind = 'end_user' THEN parent_id ELSE id END AS account_id FROM users WHERE id = $1`), [ownerId])) as { account_id: string }[];
  const accountId = owner?.account_id ?? ownerId;
  await manager.query(prepared(`SELECT pg_advisory_xact_lock(hashtextextended('files:' || $1::text, 0))`), [accountId]);
  const [usage] = (await manager.query(
    prepared(`SELECT
       (SELECT coalesce(sum(bytes), 0) FROM files WHERE owner_id IN (SELECT id FROM users WHERE id = $1 OR (parent_id = $1 AND kind = 'end_user'))
          AND status <> 'deleting' AND NOT (status = 'draft' AND expires_at <= now()))::bigint AS account_bytes,
       (SELECT coalesce(sum(bytes), 0) FROM files WHERE $2::uuid IS NOT NULL AND session_id = $2::uuid AND origin IN ('inline', 'tool') AND status <> 'deleting')::bigint AS session_bytes`),
    [accountId, sessionId],
  )) as { account_bytes: string; session_bytes: string }[];
  const accountBytes = Number(usage?.account_bytes ?? 0);
  const sessionBytes = Number(usage?.session_bytes ?? 0);
  if (accountBytes + adding > quota.accountBytes) {
    throw new DomainError('file_quota_exceeded', 'The stored files of this account would exceed its storage quota (images count too)', {
      used_bytes: accountBytes,
      quota_bytes: quota.accountBytes,
    });
  }
  if (sessionBytes + adding > quota.sessionBytes) {
    throw new DomainError('session_image_quota_exceeded', `The images of this session would exceed ${quota.sessionBytes} bytes`, {
      used_bytes: sessionBytes,
      quota_bytes: quota.sessionBytes,
    });
  }
}
