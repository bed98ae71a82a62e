import { DataSource } from 'typeorm';
import { createDataSource } from '@app/persistence';

/** Opens a small connection pool for one command and always closes it. */
export async function withDataSource<T>(databaseUrl: string, work: (dataSource: DataSource) => Promise<T>): Promise<T> {
  const dataSource = createDataSource({ url: databaseUrl, poolSize: 2, applicationName: 'voice-agent-cli' });
  await dataSource.initialize();
  try {
    return await work(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
