import { ApiHeader, ApiParam } from '@nestjs/swagger';

/** Path parameters and headers shared by the operations, described once. */
const UUID = { type: 'string', format: 'uuid' } as const;

export const ApiSessionId = () => ApiParam({ name: 'session_id', description: 'A session of the caller (another caller\'s answers 404).', schema: UUID });
export const ApiTurnId = () => ApiParam({ name: 'turn_id', description: 'A turn of the session.', schema: UUID });
export const ApiInputId = () => ApiParam({ name: 'input_id', description: 'An input of the session (the `input_id` of its receipt).', schema: UUID });
export const ApiRunId = () => ApiParam({ name: 'run_id', description: 'A run of the session.', schema: UUID });

/** `Idempotency-Key` of a write; `example` is what Swagger's "Try it out" sends by default. */
export const ApiIdempotencyKey = (example: string) =>
  ApiHeader({
    name: 'Idempotency-Key',
    required: true,
    description:
      '1–128 characters, one per logical request. A retry with the same key and the same body returns the first response byte for byte; the same key with a different body is 409 `idempotency_conflict`.',
    schema: { type: 'string', minLength: 1, maxLength: 128, example },
  });

/** `If-Match` of a session update: the revision last read, quoted or bare. */
export const ApiIfMatch = () =>
  ApiHeader({
    name: 'If-Match',
    required: false,
    description:
      'The session\'s `yuxi.revision` as last read, quoted (`"3"`) or bare (`3`). The update applies only at that revision, else 412 `revision_mismatch` and nothing changes. Omitted (or `*`): the update applies unconditionally.',
    schema: { type: 'string', maxLength: 16, example: '"1"' },
  });
