import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '#libs/audit';
import { ModelsModule } from '#libs/models';
import { AgentEntity } from './agent.entity.js';
import { AgentAdmin } from './agent-admin.js';
import { AgentsService } from './agents.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([AgentEntity]), ModelsModule, AuditModule],
  providers: [AgentsService, AgentAdmin],
  exports: [AgentsService, AgentAdmin],
})
export class AgentsModule {}
