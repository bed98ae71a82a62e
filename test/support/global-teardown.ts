import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { testRunResources } from './test-run-id';

/** Drops what global setup created: the database, the queue keys, the artifacts. */
export default async function globalTeardown(): Promise<void> {
  const { databaseUrl, queuePrefix, artifactsDir } = testRunResources();
  if (process.env.KEEP_TEST_DATA) return;
  rmSync(artifactsDir, { recursive: true, force: true });

  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
  await redis.connect();
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${queuePrefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }

  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
