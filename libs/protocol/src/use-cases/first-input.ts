import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { type AcceptedReceipt, frozenInputConfig, type InputMessage, InputsRepository, type SessionEntity } from '#libs/engine';
import { FilesRepository } from '#libs/files';
import { type InlineImageBatch, InlineImages } from '../inline-images.js';
import { StorageQuota } from '../storage/storage-totals.js';
import { acceptedReceipt, type Staging } from './acceptance.js';

/**
 * The first input of a session created with one (CreateSession): its inline images staged as
 * session files before the transaction, then the input queued as input 1 with its attachments and
 * images bound to it, in the transaction that creates the session.
 */
@Injectable()
export class FirstInput {
  constructor(
    private readonly inputs: InputsRepository,
    private readonly files: FilesRepository,
    private readonly inlineImages: InlineImages,
    private readonly quota: StorageQuota,
  ) {}

  /**
   * What the acceptance stages before its transaction: the images, behind the storage quota when
   * one is set (checked once no receipt answers the key, before anything is stored). Off: the
   * staging as it is.
   */
  gated(ownerId: string, staging: Staging | undefined): Staging | undefined {
    return this.quota.on ? this.quota.gate(ownerId, staging) : staging;
  }

  /** The input's inline images, decoded and staged for a session not created yet (errors under `input`). */
  decode(ownerId: string, messages: InputMessage[]): Promise<InlineImageBatch> {
    return this.inlineImages.decode({ ownerId, sessionId: null }, messages, 'input');
  }

  /** Queues the input as input 1 of the new session; an unknown or already attached file refuses the whole create. */
  async queue(manager: EntityManager, ownerId: string, session: SessionEntity, images: InlineImageBatch, attachmentFileIds: string[]): Promise<AcceptedReceipt> {
    const input = await this.inputs.insert(manager, {
      sessionId: session.id,
      receivedSeq: 1,
      mode: 'follow_up',
      messages: images.messagesFor(session.id),
      attachmentFileIds,
      config: frozenInputConfig(session),
      receivedAt: session.createdAt,
    });
    await this.files.bindDrafts(manager, ownerId, attachmentFileIds, session.id, input.id);
    await images.bind(manager, session.id, input.id);
    return acceptedReceipt(session.id, input.id);
  }
}
