import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AUTOVACUUM_OFF_WARNING, AutovacuumCheck } from './autovacuum-check.service';

function checkWith(query: () => Promise<unknown>): AutovacuumCheck {
  return new AutovacuumCheck({ query } as unknown as DataSource);
}

describe('AutovacuumCheck', () => {
  let warn: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  it('warns when the server does not vacuum by itself', async () => {
    expect(await checkWith(async () => [{ autovacuum: 'off' }]).check()).toBe(false);
    expect(warn).toHaveBeenCalledWith(AUTOVACUUM_OFF_WARNING);
  });

  it('stays quiet when autovacuum is on', async () => {
    expect(await checkWith(async () => [{ autovacuum: 'on' }]).check()).toBe(true);
    expect(warn).not.toHaveBeenCalled();
  });

  it('neither warns nor fails when the database cannot be asked', async () => {
    expect(await checkWith(() => Promise.reject(new Error('connection refused'))).check()).toBeNull();
    expect(warn).not.toHaveBeenCalled();
  });
});
