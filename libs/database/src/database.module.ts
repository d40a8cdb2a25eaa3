import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { AppConfig } from '#libs/config';
import { dataSourceOptions, knownMigrationNames } from './data-source-options.js';
import { PostgresErrorMetrics } from './postgres-metrics.js';
import { assertSchemaCurrent, SchemaVersionError } from './schema-guard.js';

/**
 * The Postgres connection shared by every lib (its failures counted); each lib registers its own
 * entities with forFeature. The connection is handed to nobody before the database's schema is
 * found to be exactly this build's (assertSchemaCurrent): every process that writes (api, worker,
 * operator commands) goes through here, so none writes to a schema it does not know. That refusal
 * is final (no connection retry): the database will not change by waiting.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config.databaseUrl, config.dbPoolSize, config.dbQueryTimeoutMs),
        autoLoadEntities: true,
        toRetry: (error: unknown) => !(error instanceof SchemaVersionError),
      }),
      dataSourceFactory: async (options?: DataSourceOptions) => {
        const dataSource = await new DataSource(options!).initialize();
        try {
          await assertSchemaCurrent(dataSource, knownMigrationNames());
        } catch (error) {
          await dataSource.destroy().catch(() => undefined);
          throw error;
        }
        return dataSource;
      },
    }),
  ],
  providers: [PostgresErrorMetrics],
})
export class DatabaseModule {}
