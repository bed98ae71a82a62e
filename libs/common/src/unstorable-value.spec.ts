import { Client } from 'pg';
import { testRunResources } from '../../../test/support/test-run-id';
import { isUnstorableValue } from './unstorable-value';

describe('values Postgres refuses to store', () => {
  const client = new Client({ connectionString: testRunResources().databaseUrl });
  beforeAll(() => client.connect());
  afterAll(() => client.end());

  const refusal = (sql: string, value: string) => client.query(sql, [value]).then(
    () => {
      throw new Error(`${sql} took ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as Error & { code: string; routine: string },
  );

  it('are the JSON with a NUL or an unpaired surrogate and the text with a NUL, not other bad input', async () => {
    expect(isUnstorableValue(await refusal('SELECT $1::jsonb', '{"a":"\\u0000"}'))).toBe(true);
    expect(isUnstorableValue(await refusal('SELECT $1::jsonb', '{"a":"\\ud800"}'))).toBe(true);
    expect(isUnstorableValue(await refusal('SELECT $1::text', 'a\u0000b'))).toBe(true);
    expect(isUnstorableValue(await refusal('SELECT $1::int', 'abc'))).toBe(false);
    expect(isUnstorableValue(await refusal('SELECT $1::uuid', 'abc'))).toBe(false);
  });

  it('are told apart by the server function, not the message, which a server may send in another language', async () => {
    const error = await refusal('SELECT $1::jsonb', '{"a":"\\ud800"}');
    expect(error).toMatchObject({ code: '22P02', routine: expect.stringMatching(/json/i) });
    const translated = Object.assign(new Error('ungültige Eingabesyntax für Typ json'), {
      code: error.code,
      routine: error.routine,
    });
    expect(isUnstorableValue(translated)).toBe(true);
    // As TypeORM wraps it.
    expect(isUnstorableValue(Object.assign(new Error('query failed'), { driverError: translated }))).toBe(true);
    const integer = await refusal('SELECT $1::int', 'abc');
    expect(isUnstorableValue(Object.assign(new Error('ungültige Eingabesyntax für Typ integer'), { code: integer.code, routine: integer.routine }))).toBe(false);
  });
});
