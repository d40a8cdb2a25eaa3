import { defineMachine, type StateOf } from '#libs/database';

/**
 * The files table's state machine. An upload is written `uploading` and becomes a `draft` of its
 * owner; an input binds a draft to its session (`bound`) and preparation copies it into the
 * session workdir (`ready`). An inline image or a tool's image is written `uploading` too and
 * becomes `inline` (an input's image) or `ready` (a tool's) once its bytes are stored. Every file
 * leaves through `deleting`: its stored objects are removed, then its row (a DELETE, no state).
 */
export const FILE_MACHINE = defineMachine({
  table: 'files',
  column: 'status',
  states: ['uploading', 'draft', 'bound', 'ready', 'inline', 'deleting'],
  initial: ['uploading'],
  terminal: ['deleting'],
  edges: {
    create: { from: [null], to: ['uploading'] },
    /** The upload's bytes are stored: a draft of its owner, until it expires or an input binds it. */
    stored: { from: ['uploading'], to: ['draft'] },
    /** An inline image's or a tool image's bytes are stored. */
    storedImage: { from: ['uploading'], to: ['inline', 'ready'] },
    bind: { from: ['draft'], to: ['bound'] },
    /** Preparation copied the file into the session workdir. */
    prepared: { from: ['bound'], to: ['ready'] },
    /** An upload or image that failed, an expired or deleted draft, a deleted session's or attachment's file. */
    remove: { from: ['uploading', 'draft', 'bound', 'ready', 'inline'], to: ['deleting'] },
  },
});
export type FileStatus = StateOf<typeof FILE_MACHINE>;

/** Files an input holds for its session: bound, or already in its workdir. */
export const ATTACHED = FILE_MACHINE.guard('status', 'bound', 'ready');