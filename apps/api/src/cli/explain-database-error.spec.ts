import { CliFailure } from './cli-failure';
import { explainDatabaseError } from './explain-database-error';

const URL_WITHOUT_PASSWORD = 'postgres://postgres@127.0.0.1:5432/voice_agent';

describe('explainDatabaseError', () => {
  it('says how to fix a server that asks for a password the URL does not have (pg gives no SQLSTATE for it)', () => {
    const explained = explainDatabaseError(new Error('SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string'), URL_WITHOUT_PASSWORD);

    expect(explained).toBeInstanceOf(CliFailure);
    expect((explained as Error).message).toBe(
      'Postgres at 127.0.0.1:5432/voice_agent asks for a password and DATABASE_URL has none: put one in it ' +
        '(postgres://user:password@host:port/db), or let Postgres trust local connections (a "trust" line for 127.0.0.1 in pg_hba.conf)',
    );
  });

  it('explains the codes an operator can act on, and passes any other error on as it is', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect((explainDatabaseError(refused, URL_WITHOUT_PASSWORD) as Error).message).toBe(
      'cannot reach Postgres at 127.0.0.1:5432/voice_agent (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:5432',
    );
    const other = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    expect(explainDatabaseError(other, URL_WITHOUT_PASSWORD)).toBe(other);
  });

  it('says to migrate when a table is missing, except to migrate itself, whose failure is told in its own words', () => {
    const missing = Object.assign(new Error('relation "workflow_runs" does not exist'), { code: '42P01' });
    expect((explainDatabaseError(missing, URL_WITHOUT_PASSWORD) as Error).message).toBe(
      'the database 127.0.0.1:5432/voice_agent has no schema yet: run "npm run cli -- migrate" first',
    );
    expect(explainDatabaseError(missing, URL_WITHOUT_PASSWORD, { makesSchema: true })).toBe(missing);
  });
});
