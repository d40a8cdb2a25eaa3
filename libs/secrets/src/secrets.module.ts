import { Module } from '@nestjs/common';
import { AuditModule } from '#libs/audit';
import { SecretsStore } from './secrets-store.js';

// AppConfig (SECRETS_KEY) comes from the global ConfigModule.
@Module({
  imports: [AuditModule],
  providers: [SecretsStore],
  exports: [SecretsStore],
})
export class SecretsModule {}
