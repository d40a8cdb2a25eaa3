import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared } from '#libs/database';

/** The furthest an administrator may move the usage clock, either way: two years (enough for any day, month or year roll-over). */
export const USAGE_CLOCK_MAX_OFFSET_S = 2 * 366 * 24 * 3600;

/**
 * The clock of usage periods and report days (`usage_now()`): the database's, moved by an offset
 * where the deployment lets administrators move it (USAGE_CLOCK_ADJUSTABLE), so tests can cross a
 * day or a month. Leases, reservations and every other time read the database's own clock.
 */
@Injectable()
export class UsageClock {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Sets the offset (seconds, bounded by the caller) and answers it with the usage clock's reading under it. */
  async set(offsetS: number): Promise<{ offsetS: number; now: Date }> {
    const [row] = (await this.dataSource.query(
      prepared(`WITH moved AS (UPDATE usage_clock SET offset_s = $1 WHERE id = 1 RETURNING offset_s)
       SELECT offset_s, now() + make_interval(secs => offset_s) AS now FROM moved`),
      [offsetS],
    )) as { offset_s: string; now: Date }[];
    return { offsetS: Number(row!.offset_s), now: row!.now };
  }
}
