import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ProjectEntity } from './project.entity.js';
import { ProjectsRepository } from './projects.repository.js';
import { SessionEntity } from './session.entity.js';
import { SessionSearch } from './session-search.js';
import { SessionsRepository } from './sessions.repository.js';
import { TreeRepository } from './tree.repository.js';

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity, ProjectEntity])],
  providers: [SessionsRepository, ProjectsRepository, TreeRepository, SessionSearch],
  exports: [SessionsRepository, ProjectsRepository, TreeRepository, SessionSearch],
})
export class SessionsModule {}
