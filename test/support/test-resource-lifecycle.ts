import { Redis } from 'ioredis';
import { Client } from 'pg';
import type { DataSourceOptions } from 'typeorm';
// Also used by global setup and teardown, which run outside Jest's module mapping: files, not `@app/*` barrels.
import { createDataSource } from '../../libs/persistence/src/create-data-source';
import { ensureDatabase } from '../../libs/persistence/src/ensure-database';
import { runMigrations } from '../../libs/persistence/src/run-migrations';

/**
 * Creates the database `url` names, if missing, and brings it to the latest
 * migration, or through `migrations` only (a database as a previous release left it).
 */
export async function createMigratedDatabase(url: string, migrations?: DataSourceOptions['migrations']): Promise<void> {
  await ensureDatabase(url);
  const dataSource = createDataSource({ url, poolSize: 2 });
  if (migrations) dataSource.setOptions({ migrations });
  await dataSource.initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/** Creates the database `url` names as a copy of `templateUrl`'s, which nobody may be connected to. */
export async function cloneDatabase(templateUrl: string, url: string): Promise<void> {
  await asAdmin(url, (client) => client.query(`CREATE DATABASE "${databaseName(url)}" TEMPLATE "${databaseName(templateUrl)}"`));
}

/** Drops the database `url` names, whoever is still connected to it. */
export async function dropDatabase(url: string): Promise<void> {
  await asAdmin(url, (client) => client.query(`DROP DATABASE IF EXISTS "${databaseName(url)}" WITH (FORCE)`));
}

function databaseName(url: string): string {
  return new URL(url).pathname.slice(1);
}

/** Runs `work` on a connection to the `postgres` database of `url`'s server. */
async function asAdmin(url: string, work: (client: Client) => Promise<unknown>): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}

/** Deletes every Redis key under a queue prefix. */
export async function deleteQueueKeys(queuePrefix: string): Promise<void> {
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
}
