import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '@app/config';
import { createDataSource } from './create-data-source';
import { RunReader } from './run-reader.service';
import { WorkflowRunStore } from './workflow-run.store';

/**
 * Provides the initialized `DataSource` to both apps. Initialization fails the
 * boot when Postgres is unreachable; afterwards the pool reconnects by itself.
 */
@Global()
@Module({
  providers: [
    {
      provide: DataSource,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        const dataSource = createDataSource({ url: config.databaseUrl, poolSize: config.databasePoolSize });
        return dataSource.initialize();
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
