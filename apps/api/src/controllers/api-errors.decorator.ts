import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ERROR_CODES, type ErrorCode } from '#libs/errors';
import { errorExample } from '../openapi/error-examples.js';
import { ErrorResponseDto } from '../openapi/error-response.dto.js';

/** Documents the error responses of an endpoint, grouped by status, with the codes it may return and an example of each. */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...codes, 'unauthorized', 'user_suspended', 'internal_error'] as ErrorCode[]) {
    const status = ERROR_CODES[code].status;
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  }
  return applyDecorators(
    ...[...byStatus.entries()].map(([status, list]) =>
      ApiResponse({
        status,
        type: ErrorResponseDto,
        description: list.map((code) => `\`${code}\`: ${ERROR_CODES[code].description}`).join('<br>'),
        examples: Object.fromEntries(list.map((code) => [code, errorExample(code)])),
      }),
    ),
  );
}
