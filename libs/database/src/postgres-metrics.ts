import { Injectable, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntitySubscriberInterface } from 'typeorm';
import { metrics } from '#libs/metrics';

/** The parts of TypeORM's Postgres driver that show connection failures. */
interface PostgresDriverView {
  master?: { on(event: 'error', listener: (error: unknown) => void): void };
  obtainMasterConnection?: () => Promise<unknown>;
}

/**
 * Counts Postgres failures of this process as `yuxi_postgres_errors_total{component}`: `connect`
 * (no connection could be had: refused, timed out, the server is starting or shutting down),
 * `query` (a statement failed, whatever the cause: a constraint, a timeout, a lost connection) and
 * `pool` (an idle pooled connection broke: the server restarted or terminated it).
 */
@Injectable()
export class PostgresErrorMetrics implements OnModuleInit {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    const driver = this.dataSource.driver as unknown as PostgresDriverView;
    driver.master?.on('error', () => metrics.postgresError('pool'));
    const obtain = driver.obtainMasterConnection?.bind(driver);
    if (obtain) {
      driver.obtainMasterConnection = () =>
        obtain().catch((error: unknown) => {
          metrics.postgresError('connect');
          throw error;
        });
    }
    const subscriber: EntitySubscriberInterface = {
      afterQuery: (event) => {
        if (!event.success) metrics.postgresError('query');
      },
    };
    this.dataSource.subscribers.push(subscriber);
  }
}
