import path from 'node:path';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { Checkout, type WorkspaceBounds } from './checkout.js';
import { diffManifests, type Manifest } from './manifest.js';
import { WorkspaceBlobs } from './workspace-blobs.js';
import { type VersionAuthor, type WorkspaceHead, WorkspacesRepository } from './workspaces.repository.js';

/** A session's checkout brought to a version, ready for a call. */
export interface OpenWorkspace {
  workdirId: string;
  checkout: Checkout;
  /** The version the checkout was brought to: what the call's changes are measured against. */
  base: WorkspaceHead | null;
}

export interface CommitOptions {
  /** The workspace's first version: ends its setup, with this output. */
  setupOutput?: string;
  /** Attachments the commit copies in. */
  placedFileIds?: string[];
}

export type CommitResult =
  | { kind: 'unchanged' }
  | { kind: 'committed'; version: WorkspaceHead; uploaded: number; written: string[] }
  /** Past a bound: nothing committed, the checkout is back at the head. */
  | { kind: 'refused'; reason: string };

/**
 * Workspaces' versions and sessions' checkouts of them: a call opens the session's checkout at the
 * workspace's head (downloading only what differs), runs, and commits what it changed as a new
 * version (uploading only blobs no version stored yet).
 */
@Injectable()
export class WorkspaceStore {
  constructor(
    private readonly repository: WorkspacesRepository,
    private readonly blobs: WorkspaceBlobs,
    private readonly config: AppConfig,
  ) {}

  checkoutOf(sessionId: string): Checkout {
    // Session ids are server-made UUIDs: they never hold a path separator.
    if (!/^[0-9a-f-]{36}$/.test(sessionId)) throw new Error(`not a session id: ${sessionId}`);
    return new Checkout(path.resolve(this.config.sandbox.dir, 'checkouts', sessionId), { uid: this.config.sandbox.uid, gid: this.config.sandbox.gid });
  }

  /** Brings the session's checkout to `head` (null: an empty workspace). */
  async open(sessionId: string, workdirId: string, head: WorkspaceHead | null, bounds: WorkspaceBounds): Promise<OpenWorkspace> {
    const checkout = this.checkoutOf(sessionId);
    await checkout.prepare();
    // What is on disk, not what the last call left: a worker that died mid-call leaves changes no
    // version holds, and those are dropped here. A checkout past the bounds is rebuilt from scratch.
    let current = await checkout.scan({ maxFiles: bounds.maxFiles * 2, maxBytes: bounds.maxBytes * 2 });
    if (!current.ok) {
      await checkout.wipe();
      current = { ok: true, manifest: {} };
    }
    await checkout.syncTo(current.manifest, head?.manifest ?? {}, (hash) => this.blobs.fetch(hash));
    return { workdirId, checkout, base: head };
  }

  /**
   * Commits what the call changed in the checkout: a new version merged onto the workspace's
   * current head (per path, the last writer wins). Past the bounds nothing is committed and the
   * checkout is put back to the head.
   */
  async commit(open: OpenWorkspace, author: VersionAuthor, bounds: WorkspaceBounds, options: CommitOptions = {}): Promise<CommitResult> {
    const { setupOutput, placedFileIds } = options;
    const scanned = await open.checkout.scan(bounds);
    const base = open.base?.manifest ?? {};
    if (!scanned.ok) {
      await this.resetToHead(open, bounds);
      return { kind: 'refused', reason: scanned.reason };
    }
    const changes = diffManifests(base, scanned.manifest);
    const written = Object.keys(changes.written);
    if (written.length === 0 && changes.deleted.length === 0 && setupOutput === undefined && !placedFileIds?.length) return { kind: 'unchanged' };
    let uploaded = 0;
    const known = knownHashes(base);
    for (const rel of written) {
      const entry = changes.written[rel]!;
      if (known.has(entry[0])) continue;
      if (await this.blobs.store(await open.checkout.readEntry(rel, entry))) uploaded++;
      known.add(entry[0]);
    }
    // What the setup or an attachment put in the workspace is not the call's writing: no artifacts.
    const artifacts = setupOutput === undefined && placedFileIds === undefined;
    const version = await this.repository.commit({ workdirId: open.workdirId, author, changes, setupOutput, placedFileIds, artifacts });
    return { kind: 'committed', version, uploaded, written };
  }

  private async resetToHead(open: OpenWorkspace, bounds: WorkspaceBounds): Promise<void> {
    const state = await this.repository.state(open.workdirId);
    const head = state?.head ?? null;
    const current = await open.checkout.scan({ maxFiles: bounds.maxFiles * 2, maxBytes: bounds.maxBytes * 2 });
    if (!current.ok) await open.checkout.wipe();
    await open.checkout.syncTo(current.ok ? current.manifest : {}, head?.manifest ?? {}, (hash) => this.blobs.fetch(hash));
  }
}

function knownHashes(manifest: Manifest): Set<string> {
  return new Set(Object.values(manifest).map(([hash]) => hash));
}
