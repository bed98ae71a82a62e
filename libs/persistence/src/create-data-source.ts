import { DataSource } from 'typeorm';
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
}

/** The one way to reach Postgres: schema comes from migrations only, never `synchronize`. */
export function createDataSource(options: DataSourceOptions): DataSource {
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
      statement_timeout: options.statementTimeoutMs ?? 15000,
    },
  });
}
