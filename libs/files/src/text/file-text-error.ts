/**
 * A file whose text could not be read (unparsable, too slow, too large); the message is safe to
 * show. `busy`: the reader's queue was longer than the wait allows: nothing is wrong with the file.
 */
export class FileTextError extends Error {
  override readonly name = 'FileTextError';
  constructor(
    message: string,
    readonly busy = false,
  ) {
    super(message);
  }
}
