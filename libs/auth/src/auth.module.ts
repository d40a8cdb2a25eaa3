import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthService } from './auth.service.js';
import { ApiKeyEntity, UserEntity } from './entities.js';

@Module({
  imports: [TypeOrmModule.forFeature([UserEntity, ApiKeyEntity])],
  providers: [AuthService],
  exports: [AuthService],
})
export class AuthModule {}
