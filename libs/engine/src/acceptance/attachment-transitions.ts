import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { FilesRepository } from '#libs/files';
import { type InputEntity } from '../tables/input.entity.js';
import { InputsRepository } from '../tables/inputs.repository.js';
import type { ItemEntity } from '../tables/turn.entities.js';

/**
 * The attachment side of an input's life: `preparing` until every attached file is in the
 * session's workdir, then `ready` (only then can a claim take it); on consumption each input's
 * files bind to its last user message. The copying itself is the worker's (libs/runtime).
 */
@Injectable()
export class AttachmentTransitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly inputs: InputsRepository,
    private readonly files: FilesRepository,
  ) {}

  /**
   * The files `copiedIds` of the input are in the workdir: they become ready, and the input too
   * once none is left to copy. Concurrent preparations of one input serialise on its row.
   * Returns the session, whether this call made the input ready, and which of the copied files
   * were deleted while they were being copied (a cancelled input's, see deleteAttachment): their
   * workdir copies belong to no file and are for the caller to remove.
   */
  async filesPrepared(inputId: string, copiedIds: string[]): Promise<{ sessionId: string; becameReady: boolean; deletedIds: string[] } | null> {
    return this.dataSource.transaction(async (manager) => {
      const input = await this.inputs.lockById(manager, inputId);
      if (!input) return null;
      if (copiedIds.length > 0) await this.files.markReady(manager, inputId, copiedIds);
      const attached = new Set(await this.files.stillAttached(manager, inputId, copiedIds));
      const becameReady = (await this.files.allReady(manager, inputId)) && (await this.inputs.markAttachmentsReady(manager, inputId));
      return { sessionId: input.sessionId, becameReady, deletedIds: copiedIds.filter((id) => !attached.has(id)) };
    });
  }

  /** A preparation attempt failed: clients see why on the input; it stays preparing and is retried. */
  async preparationFailed(inputId: string, message: string): Promise<void> {
    await this.inputs.recordAttachmentError(inputId, message);
  }

  /**
   * Consumption: each input's files bind to its last user message (in the claiming transaction).
   * Returns the messages that got no files (and never will).
   */
  async bindToMessages(manager: EntityManager, inputs: InputEntity[], userItems: ItemEntity[]): Promise<string[]> {
    const pairs = attachmentBindings(inputs, userItems);
    await this.files.bindToMessages(manager, pairs);
    const bound = new Set(pairs.map((pair) => pair.messageId));
    return userItems.filter((item) => !bound.has(item.id)).map((item) => item.id);
  }
}

/**
 * Which user message each input's files bind to: its last one. Files bind in the transaction that
 * writes the message, never later, so a message given none here never has any: returned by
 * bindToMessages, the context builder skips looking such messages' files up.
 */
export function attachmentBindings(inputs: InputEntity[], userItems: ItemEntity[]): { inputId: string; messageId: string }[] {
  const pairs: { inputId: string; messageId: string }[] = [];
  for (const input of inputs) {
    if (input.attachmentFileIds.length === 0) continue;
    const last = userItems.filter((item) => item.inputId === input.id).at(-1);
    if (last) pairs.push({ inputId: input.id, messageId: last.id });
  }
  return pairs;
}
