import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '#libs/config';
import { dataSourceOptions } from './data-source-options.js';

/** The Postgres connection shared by every lib; each lib registers its own entities with forFeature. */
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
})
export class DatabaseModule {}
