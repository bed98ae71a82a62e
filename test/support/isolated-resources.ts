import { Redis } from 'ioredis';
import { Client } from 'pg';
import { createDataSource } from '../../libs/persistence/src/create-data-source';
import { ensureDatabase } from '../../libs/persistence/src/ensure-database';
import { runMigrations } from '../../libs/persistence/src/run-migrations';
import { testRunResources } from './test-run-id';

export interface IsolatedResources {
  /** Environment overrides for startTestApps: this suite's own database and queue prefix. */
  env: { DATABASE_URL: string; QUEUE_PREFIX: string };
  drop(): Promise<void>;
}

/**
 * A database (migrated) and a queue prefix of one suite's own, beside the
 * run's shared ones. For suites whose dialer sweeps every queued run: in the
 * shared database it would also find, and dial, the runs and jobs other suites
 * left queued, and its timings would depend on them.
 */
export async function createIsolatedResources(name: string): Promise<IsolatedResources> {
  const { databaseUrl, queuePrefix } = testRunResources();
  const url = new URL(databaseUrl);
  url.pathname = `${url.pathname}_${name}`;
  const isolatedUrl = url.toString();
  await ensureDatabase(isolatedUrl);
  const dataSource = createDataSource({ url: isolatedUrl, poolSize: 2 });
  await dataSource.initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
  const prefix = `${queuePrefix.slice(0, -1)}-${name}}`;
  return {
    env: { DATABASE_URL: isolatedUrl, QUEUE_PREFIX: prefix },
    drop: async () => {
      const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
          if (keys.length) await redis.del(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
      const admin = new URL(isolatedUrl);
      admin.pathname = '/postgres';
      const client = new Client({ connectionString: admin.toString() });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS "${url.pathname.slice(1)}" WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
