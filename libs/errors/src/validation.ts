import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { DomainError, type FieldError } from './domain-error.js';

/** Whitelist + forbid unknown fields; every bad field is listed in `details.fields`. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => DomainError.validation(flattenValidationErrors(errors)),
  });
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
