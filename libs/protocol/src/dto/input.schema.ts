import type { SchemaObject } from '@nestjs/swagger';

/** OpenAPI schema of one user message of an input (a session's, an automation's). */
export const INPUT_MESSAGE_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['role', 'content'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: ['message'] },
    role: { type: 'string', enum: ['user'] },
    content: {
      oneOf: [
        { type: 'string', minLength: 1 },
        {
          type: 'array',
          minItems: 1,
          items: {
            oneOf: [
              {
                type: 'object',
                required: ['type', 'text'],
                additionalProperties: false,
                properties: { type: { type: 'string', enum: ['input_text'] }, text: { type: 'string', minLength: 1 } },
              },
              {
                type: 'object',
                required: ['type', 'image_url'],
                additionalProperties: false,
                description:
                  'Inline data URL only (data:image/png;base64,…; png, jpeg/jpg, gif or webp); at most 10 per message and 72 MiB (decoded) per submission. The bytes must be the declared type (else 422). The image is stored once as a session file on acceptance: the stored input, its user items and their events carry `{"type":"input_image","file_id","image_url"}` with `image_url` = `/api/v1/agents/sessions/{session_id}/files/{file_id}/content` instead of the data URL; the model still receives the image.',
                properties: { type: { type: 'string', enum: ['input_image'] }, image_url: { type: 'string', pattern: '^data:image/(png|jpeg|jpg|gif|webp);base64,' } },
              },
            ],
          },
        },
      ],
    },
  },
};

/** OpenAPI schema of `input`: a string, or 1–20 ordered user messages. */
export const AGENT_INPUT_SCHEMA: SchemaObject = {
  oneOf: [
    { type: 'string', minLength: 1, example: 'hello there' },
    {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: INPUT_MESSAGE_SCHEMA,
    },
  ],
};
