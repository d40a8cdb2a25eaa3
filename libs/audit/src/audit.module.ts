import { Module } from '@nestjs/common';
import { AuditLog } from './audit-log.js';
import { AuditRetention } from './audit-retention.js';

/** The audit trail (`audit_log`): written by the libs that perform administrative actions, read by administrators, aged out by AuditRetention (the worker's retention sweep). */
@Module({ providers: [AuditLog, AuditRetention], exports: [AuditLog, AuditRetention] })
export class AuditModule {}
