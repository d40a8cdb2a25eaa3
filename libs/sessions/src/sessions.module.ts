import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ProjectEntity } from './project.entity.js';
import { ProjectsRepository } from './projects.repository.js';
import { SessionEntity } from './session.entity.js';
import { SessionsRepository } from './sessions.repository.js';

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity, ProjectEntity])],
  providers: [SessionsRepository, ProjectsRepository],
  exports: [SessionsRepository, ProjectsRepository],
})
export class SessionsModule {}
