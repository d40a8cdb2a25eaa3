import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '#libs/config';
import { dataSourceOptions } from './data-source-options.js';
import { PostgresErrorMetrics } from './postgres-metrics.js';

/** The Postgres connection shared by every lib (its failures counted); each lib registers its own entities with forFeature. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.databaseUrl, config.dbPoolSize, config.dbQueryTimeoutMs),
        autoLoadEntities: true,
      }),
    }),
  ],
  providers: [PostgresErrorMetrics],
})
export class DatabaseModule {}
