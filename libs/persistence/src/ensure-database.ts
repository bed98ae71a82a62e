import { Client } from 'pg';

/** Another session created the database between our look and our CREATE: 42P04, or the catalog's unique key. */
const CREATED_MEANWHILE = new Set(['42P04', '23505']);

/**
 * Creates the database named in `url` when it does not exist yet (local
 * start-up and tests); true when this call created it. Replicas that run
 * `migrate` together on a new database all succeed, one of them creating it.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`Refusing to create database with unusual name "${name}"`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE "${name}"`);
    } catch (error) {
      if (CREATED_MEANWHILE.has((error as { code?: string }).code ?? '')) return false;
      throw error;
    }
    return true;
  } finally {
    await client.end();
  }
}
