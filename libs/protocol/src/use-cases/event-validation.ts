import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { DomainError, flattenValidationErrors } from '#libs/errors';

/** The one event of `POST …/events` validated against its type's DTO (unknown fields refused), errors under `events[0]`. */
export async function validateEvent<T extends object>(cls: new () => T, raw: Record<string, unknown>): Promise<T> {
  const instance = plainToInstance(cls, raw);
  const errors = await validate(instance, { whitelist: true, forbidNonWhitelisted: true, validationError: { target: false, value: false } });
  if (errors.length > 0) throw DomainError.validation(flattenValidationErrors(errors, 'events[0]'));
  return instance;
}
