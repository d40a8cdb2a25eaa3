import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { listEnvelope, type PageQuery } from '#libs/database';
import { SessionsRepository } from '#libs/engine';
import { type Artifact, type ArtifactDeletedDto, type ArtifactDto, type ArtifactListDto, ArtifactsRepository, toArtifactDto } from '#libs/environments';
import { DomainError } from '#libs/errors';
import { FILE_STORAGE, type FileStorage, StorageObjectMissing, storageKeys } from '#libs/files';

// The artifacts routes: authorised like the session (another owner's session, and an artifact of
// another session, are 404), each an operation of its own.

/** `GET …/sessions/{id}/artifacts`: the session's live artifacts, cursor pages by creation, optionally of one environment. */
@Injectable()
export class ListArtifacts {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly artifacts: ArtifactsRepository,
  ) {}

  async execute(principal: Principal, sessionId: string, page: PageQuery, environmentId?: string): Promise<ArtifactListDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    const { rows, hasMore } = await this.artifacts.list(sessionId, page, environmentId);
    const data = rows.map(toArtifactDto);
    return listEnvelope(data, hasMore);
  }
}

/** `GET …/sessions/{id}/artifacts/{artifact_id}`. */
@Injectable()
export class GetArtifact {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly artifacts: ArtifactsRepository,
  ) {}

  async execute(principal: Principal, sessionId: string, artifactId: string): Promise<ArtifactDto> {
    return toArtifactDto(await visibleArtifact(this.sessions, this.artifacts, principal, sessionId, artifactId));
  }
}

/** `GET …/sessions/{id}/artifacts/{artifact_id}/content`: the bytes as the call wrote them, streamed from the store. */
@Injectable()
export class GetArtifactContent {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly artifacts: ArtifactsRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  async execute(principal: Principal, sessionId: string, artifactId: string): Promise<{ artifact: Artifact; stream: Readable }> {
    const artifact = await visibleArtifact(this.sessions, this.artifacts, principal, sessionId, artifactId);
    try {
      return { artifact, stream: await this.storage.open(storageKeys.blob(artifact.sha256)) };
    } catch (error) {
      if (error instanceof StorageObjectMissing) throw DomainError.notFound(`Artifact ${artifactId}`);
      throw error;
    }
  }
}

/** `DELETE …/sessions/{id}/artifacts/{artifact_id}`: the artifact record goes; the workspace's file and its versions stay. */
@Injectable()
export class DeleteArtifact {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly artifacts: ArtifactsRepository,
  ) {}

  async execute(principal: Principal, sessionId: string, artifactId: string): Promise<ArtifactDeletedDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    if (!(await this.artifacts.softDelete(sessionId, artifactId))) throw DomainError.notFound(`Artifact ${artifactId}`);
    return { id: artifactId, object: 'agent.session.artifact.deleted', deleted: true };
  }
}

async function visibleArtifact(sessions: SessionsRepository, artifacts: ArtifactsRepository, principal: Principal, sessionId: string, artifactId: string): Promise<Artifact> {
  await sessions.getVisible(principal.userId, sessionId);
  const artifact = await artifacts.get(sessionId, artifactId);
  if (!artifact) throw DomainError.notFound(`Artifact ${artifactId}`);
  return artifact;
}

export const ARTIFACT_USE_CASES = [ListArtifacts, GetArtifact, GetArtifactContent, DeleteArtifact];
