import { type ValidationOptions, ValidateIf, registerDecorator } from 'class-validator';
import { parseAgentInput } from '../input-parser.js';

/**
 * Optional, but an explicit null is rejected: null has no reset meaning in this API.
 * (class-validator's @IsOptional would accept null.)
 */
export function OptionalNotNull(): PropertyDecorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined);
}

/** A text string or 1–20 user messages of input_text / inline input_image blocks. */
export function IsAgentInput(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isAgentInput',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: (value: unknown) => parseAgentInput(value).errors.length === 0,
        defaultMessage: (args) => parseAgentInput(args?.value).errors.join('; '),
      },
    });
  };
}
