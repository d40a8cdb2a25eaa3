import { Module } from '@nestjs/common';
import { WorkspacesRepository } from '../workspace/workspaces.repository.js';
import { ArtifactsRepository } from './artifacts.repository.js';

/** Sessions' artifacts and workspaces' sizes for the api (the worker writes them with the versions that hold them). */
@Module({ providers: [ArtifactsRepository, WorkspacesRepository], exports: [ArtifactsRepository, WorkspacesRepository] })
export class ArtifactsModule {}
