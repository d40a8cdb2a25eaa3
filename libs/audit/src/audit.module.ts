import { Module } from '@nestjs/common';
import { AuditLog } from './audit-log.js';

/** The audit trail (`audit_log`): written by the libs that perform administrative actions, read by administrators. */
@Module({ providers: [AuditLog], exports: [AuditLog] })
export class AuditModule {}
