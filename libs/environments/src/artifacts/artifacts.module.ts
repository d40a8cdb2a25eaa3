import { Module } from '@nestjs/common';
import { ArtifactsRepository } from './artifacts.repository.js';

/** Sessions' artifacts for the api (the worker writes them with the versions that hold them). */
@Module({ providers: [ArtifactsRepository], exports: [ArtifactsRepository] })
export class ArtifactsModule {}
