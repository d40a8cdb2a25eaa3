import { type ArgumentMetadata, ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { DomainError, type FieldError } from './domain-error.js';

/** Whitelist + forbid unknown fields; every bad field is listed in `details.fields`. */
export function createValidationPipe(): ValidationPipe {
  return new ApiValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => DomainError.validation(flattenValidationErrors(errors)),
  });
}

/**
 * Query values holding U+0000 are field errors before any other check: Postgres text cannot hold
 * NUL, so such a value would fail the query instead. (Bodies are checked as they are read.)
 */
class ApiValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'query') {
      const entries: [string, unknown][] = typeof value === 'string' ? [[metadata.data ?? 'query', value]] : Object.entries((value ?? {}) as object);
      const fields = entries
        .filter(([, v]) => [v].flat().some((s) => typeof s === 'string' && s.includes('\u0000')))
        .map(([field]) => ({ field, errors: ['must not contain the NUL character (U+0000)'] }));
      if (fields.length > 0) throw DomainError.validation(fields);
    }
    return super.transform(value, metadata);
  }
}

export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const field = prefix ? (/^\d+$/.test(error.property) ? `${prefix}[${error.property}]` : `${prefix}.${error.property}`) : error.property;
    if (error.constraints) {
      out.push({ field, errors: Object.values(error.constraints).map((m) => m.replace(/^property (\S+) should not exist$/, 'unknown field')) });
    }
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

/**
 * Optional, but an explicit null is rejected: null has no reset meaning in this API.
 * (class-validator's @IsOptional would accept null.)
 */
export function OptionalNotNull(): PropertyDecorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined);
}
