import { type ValidationOptions, registerDecorator } from 'class-validator';
import { parseAgentInput } from '../input-parser.js';

export { OptionalNotNull } from '#libs/errors';

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
