import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '@app/config';
import { createDataSource } from './create-data-source';
import { RunReader } from './run-reader.service';
import { connectMigrated } from './unapplied-migrations';
import { WorkflowRunStore } from './workflow-run.store';

/**
 * Provides the initialized `DataSource` to both apps. Initialization fails the
 * boot when Postgres is unreachable, or when its schema lacks a migration of
 * this release (a release started before its `migrate`); afterwards the pool
 * reconnects by itself.
 */
@Global()
@Module({
  providers: [
    {
      provide: DataSource,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        const dataSource = createDataSource({ url: config.databaseUrl, poolSize: config.databasePoolSize });
        return connectMigrated(dataSource);
      },
    },
    WorkflowRunStore,
    RunReader,
  ],
  exports: [DataSource, WorkflowRunStore, RunReader],
})
export class PersistenceModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
