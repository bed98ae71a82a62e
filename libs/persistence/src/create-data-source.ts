import { types as pgTypes } from 'pg';
import { DataSource } from 'typeorm';
import { AnsweringClient } from './answering-client';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { SilentTypeormLogger } from './silent-typeorm-logger';

export interface DataSourceOptions {
  url: string;
  /** Pool size per process. */
  poolSize?: number;
  applicationName?: string;
  /** Statements running longer are cancelled (default 15 s); 0 for none. */
  statementTimeoutMs?: number;
  /**
   * A connection whose statement gets no answer at all for this long is
   * taken for lost (`AnsweringClient`); default the statement timeout plus
   * READ_TIMEOUT_MARGIN_MS, none when there is no statement timeout.
   */
  readTimeoutMs?: number;
}

/** Past the statement timeout, how long Postgres has to answer with the cancel before the connection is given up. */
export const READ_TIMEOUT_MARGIN_MS = 5_000;

/** The one way to reach Postgres: schema comes from migrations only, never `synchronize`. */
export function createDataSource(options: DataSourceOptions): DataSource {
  const statementTimeoutMs = options.statementTimeoutMs ?? 15000;
  const readTimeoutMs = options.readTimeoutMs ?? (statementTimeoutMs > 0 ? statementTimeoutMs + READ_TIMEOUT_MARGIN_MS : 0);
  class PoolClient extends AnsweringClient {
    override readTimeoutMs = readTimeoutMs;
  }
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    // TypeORM's own logger prints a failed query with its bound values (callers' data) to stdout, outside the
    // JSON logs; the error itself reaches the caller, whose log line leaves the values out (see createRootLogger).
    logging: false,
    logger: new SilentTypeormLogger(),
    applicationName: options.applicationName,
    extra: {
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
      // A statement that hangs would hold a request forever; fail it instead.
      statement_timeout: statementTimeoutMs,
      Client: PoolClient,
      // An idle pooled connection whose peer went away silently is found out and dropped before a request takes it.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      types: PG_TYPES,
    },
  });
}

const INT8_ARRAY = 1016;
const INT4_ARRAY = 1007;
/** The driver's own parsers, by any type id (its typing lists base types only). */
const driverParser = pgTypes.getTypeParser as (oid: number, format?: 'text' | 'binary') => (value: string) => unknown;

/**
 * The driver's type parsers, but `bigint` (run ids, `count(*)`, ordinals)
 * read as a number instead of the driver's string, as the entities and the
 * API declare them. Exact up to 2^53 − 1, where the run id sequence stops
 * (285 years at a million runs a second). Set per pool, not on the driver's
 * global parsers.
 */
const PG_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown {
    if (format !== 'binary') {
      if (oid === pgTypes.builtins.INT8) return Number;
      // An array of them, read with the parser of `integer[]` (numbers, nulls kept).
      if (oid === INT8_ARRAY) return driverParser(INT4_ARRAY, 'text');
    }
    return driverParser(oid, format);
  },
};
