export { AUDIT_ACTIONS, type AuditAction, type AuditEntry, AuditLog } from './audit-log.js';
export { AuditEntryDto, AuditListDto } from './audit.dto.js';
export { AuditModule } from './audit.module.js';
export { AuditRetention } from './audit-retention.js';
