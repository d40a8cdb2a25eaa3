import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { assertAdmin, type Principal } from '#libs/auth';
import { setLifecycleClock, unixSeconds } from '#libs/database';
import type { LifecycleClockDto, SetLifecycleClockDto } from '../dto/lifecycle-clock.dto.js';

/** `PUT /admin/lifecycle-clock`: administrators move the clock session TTLs and retention go by (where the deployment allows it; the route says so). */
@Injectable()
export class SetLifecycleClock {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async execute(principal: Principal, dto: SetLifecycleClockDto): Promise<LifecycleClockDto> {
    assertAdmin(principal);
    const { offsetS, now } = await setLifecycleClock(this.dataSource, dto.offset_s);
    return { object: 'lifecycle_clock', offset_s: offsetS, now: unixSeconds(now) };
  }
}
