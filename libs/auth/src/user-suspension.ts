import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { AuthService } from './auth.service.js';
import { assertAdmin, type Principal } from './principal.js';
import type { UserDto } from './user.dto.js';
import { lockUser, toUserDto } from './users.js';
import { BOOTSTRAP_USER } from './user-roles.js';

/**
 * An administrator suspends a product user, or reactivates one. The change and its audit entry
 * commit together; then every replica drops the user's cached keys before this answers (the
 * invalidation channel of role changes), so the next request of any key of theirs, on any replica,
 * is refused. User tokens read the user's row on every request already. Nothing is deleted: keys,
 * sessions and files stay, and a reactivation makes every unexpired, unrevoked key work again.
 */
@Injectable()
export class SuspendUser {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditLog,
    private readonly auth: AuthService,
  ) {}

  async execute(principal: Principal, userId: string, suspended: boolean): Promise<UserDto> {
    assertAdmin(principal);
    const row = await this.dataSource.transaction(async (manager) => {
      const current = await lockUser(manager, userId);
      if (current.kind !== 'user') throw DomainError.validation([{ field: 'user_id', errors: ['must name a product user: an app end user acts through its product user\'s key (suspend that user)'] }]);
      if (suspended && current.id === principal.actorId) throw DomainError.validation([{ field: 'user_id', errors: ['an administrator cannot suspend themselves'] }]);
      // The bootstrap key is the deployment's way back in; suspending it would lock the operators out.
      if (suspended && current.name === BOOTSTRAP_USER) throw DomainError.validation([{ field: 'user_id', errors: ['the bootstrap user cannot be suspended (revoke or rotate BOOTSTRAP_API_KEY instead)'] }]);
      if ((current.suspended_at !== null) === suspended) return current;
      // An UPDATE … RETURNING answers [rows, count] through TypeORM's postgres driver.
      const [[updated]] = (await manager.query(prepared(`UPDATE users SET suspended_at = CASE WHEN $2 THEN clock_timestamp() END WHERE id = $1 RETURNING suspended_at`), [userId, suspended])) as [
        { suspended_at: Date | null }[],
        number,
      ];
      await this.audit.record(manager, {
        actorId: principal.actorId,
        keyId: principal.keyId,
        action: suspended ? 'user.suspended' : 'user.reactivated',
        targetType: 'user',
        targetId: userId,
      });
      return { ...current, suspended_at: updated?.suspended_at ?? null };
    });
    await this.auth.userChanged(userId);
    return toUserDto(row);
  }
}
