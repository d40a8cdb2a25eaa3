import { type ValidationOptions, registerDecorator } from 'class-validator';
import { parseAgentInput } from '../input-parser.js';
import { metadataErrors } from '../session-metadata.js';

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

/** A session's `metadata`: at most 16 string values under keys of 1–64 characters, values ≤ 512 characters. */
export function IsSessionMetadata(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isSessionMetadata',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: (value: unknown) => metadataErrors(value).length === 0,
        defaultMessage: (args) => metadataErrors(args?.value).join('; '),
      },
    });
  };
}

/** A tool output in the upstream form: a string, or 1–100 `{type: "input_text", text}` parts. */
export function IsToolOutput(options?: ValidationOptions): PropertyDecorator {
  const valid = (value: unknown): boolean =>
    typeof value === 'string' ||
    (Array.isArray(value) &&
      value.length > 0 &&
      value.length <= 100 &&
      value.every((part: unknown) => typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'input_text' && typeof (part as { text?: unknown }).text === 'string' && Object.keys(part).length === 2));
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isToolOutput',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: valid,
        defaultMessage: () => 'output must be a string or 1–100 {"type": "input_text", "text"} parts (images are not accepted as a tool output)',
      },
    });
  };
}
