import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SessionEntity } from './session.entity.js';
import { SessionsRepository } from './sessions.repository.js';
import { TreeRepository } from './tree.repository.js';

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity])],
  providers: [SessionsRepository, TreeRepository],
  exports: [SessionsRepository, TreeRepository],
})
export class SessionsModule {}
