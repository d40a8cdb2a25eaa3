/**
 * Redocly plugin: OpenAPI 3.0 cannot type the messages of a text/event-stream (`itemSchema` is
 * 3.2), so our stream responses name the union of event payloads in `x-sse-event-schema`. Declaring
 * that extension a Schema lets the linter resolve, validate and count the reference like any other
 * (otherwise `SessionEvent` would look unused).
 */
export default function ssePlugin() {
  return {
    id: 'yuxi-sse',
    typeExtension: {
      oas3(types) {
        return { ...types, MediaType: { ...types.MediaType, properties: { ...types.MediaType.properties, 'x-sse-event-schema': 'Schema' } } };
      },
    },
  };
}
