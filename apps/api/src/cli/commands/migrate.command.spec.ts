import { loadDatabaseUrl } from '@app/config';
import { CliFailure } from '../cli-failure';
import { CliIo } from '../cli-io';
import { scratchDatabaseUrl } from '../../../../../test/support/test-run-id';
import { migrateCommand } from './migrate.command';

jest.mock('@app/config', () => ({ ...jest.requireActual('@app/config'), loadDatabaseUrl: jest.fn() }));
jest.mock('@app/persistence', () => ({
  ...jest.requireActual('@app/persistence'),
  // The server's "postgres" database refused to this user (hosted Postgres often does): nothing was created.
  ensureDatabase: jest.fn().mockRejectedValue(Object.assign(new Error('permission denied for database "postgres"'), { code: '42501' })),
}));

describe('the migrate command, on a database that does not exist', () => {
  it('says the database could not be created through the admin database, not that DATABASE_URL is wrong', async () => {
    // Never created: the local server answers 3D000 for it, and migrate turns to the admin database.
    jest.mocked(loadDatabaseUrl).mockReturnValue(scratchDatabaseUrl('never_made'));
    const lines: string[] = [];
    const io: CliIo = { out: (text) => lines.push(text), err: (text) => lines.push(text) };
    const failure = await migrateCommand.run([], io).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CliFailure);
    const message = (failure as CliFailure).message;
    expect(message).toContain('does not exist, and it could not be created through the server\'s "postgres" database');
    expect(message).toContain('permission denied for database "postgres"');
    expect(message).toContain('create it yourself (CREATE DATABASE), then run migrate again');
    expect(lines).toEqual([]);
  });
});
