import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { prepared } from '#libs/database';

/**
 * Where the lifecycle clock may not move (LIFECYCLE_CLOCK_ADJUSTABLE=false, every production
 * deployment), a worker puts it back at start: an offset an earlier run with the setting on left
 * behind would otherwise purge, expire and archive data early, with nothing showing it.
 */
@Injectable()
export class LifecycleClockGuard implements OnApplicationBootstrap {
  private readonly logger = new Logger('Retention');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.lifecycleClockAdjustable) return;
    const [rows] = (await this.dataSource.query(
      prepared(`WITH old AS (SELECT offset_s FROM lifecycle_clock WHERE id = 1 AND offset_s <> 0 FOR UPDATE)
       UPDATE lifecycle_clock c SET offset_s = 0 FROM old WHERE c.id = 1 RETURNING old.offset_s`),
    )) as [{ offset_s: string }[], number];
    const moved = rows[0];
    if (moved) this.logger.warn(`the lifecycle clock was ${moved.offset_s} s off and LIFECYCLE_CLOCK_ADJUSTABLE is false: put back to the database's clock`);
  }
}
