import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SessionEntity } from './session.entity.js';
import { SessionsRepository } from './sessions.repository.js';

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity])],
  providers: [SessionsRepository],
  exports: [SessionsRepository],
})
export class SessionsModule {}
