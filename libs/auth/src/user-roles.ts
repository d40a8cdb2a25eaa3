import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { AuthService } from './auth.service.js';
import { assertAdmin, type Principal, type Role } from './principal.js';
import type { UserDto } from './user.dto.js';
import { lockUser, toUserDto } from './users.js';

/** The user `BOOTSTRAP_API_KEY` belongs to: made an administrator on every start, so it keeps the role. */
export const BOOTSTRAP_USER = 'bootstrap';

/**
 * An administrator grants or removes a product user's role. The change and its audit entry commit
 * together; then every replica drops the user's cached keys, so the next request carries the role.
 */
@Injectable()
export class SetUserRole {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditLog,
    private readonly auth: AuthService,
  ) {}

  async execute(principal: Principal, userId: string, role: Role | null): Promise<UserDto> {
    assertAdmin(principal);
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await lockUser(manager, userId);
      if (current.kind !== 'user') throw DomainError.validation([{ field: 'user_id', errors: ['must name a product user: an app end user holds no role'] }]);
      // Start-up would make it an administrator again; refusing says so instead of pretending.
      if (current.name === BOOTSTRAP_USER && role !== 'admin') throw DomainError.validation([{ field: 'role', errors: ['the bootstrap user stays an administrator'] }]);
      if (current.role === role) return current;
      await manager.query(prepared(`UPDATE users SET role = $2 WHERE id = $1`), [userId, role]);
      await this.audit.record(manager, {
        actorId: principal.actorId,
        keyId: principal.keyId,
        action: 'user.role_changed',
        targetType: 'user',
        targetId: userId,
        details: { role, previous_role: current.role },
      });
      return { ...current, role };
    });
    await this.auth.userChanged(userId);
    return toUserDto(row);
  }
}
