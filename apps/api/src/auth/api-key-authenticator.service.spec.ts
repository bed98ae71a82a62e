import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AppConfig } from '@app/config';
import { ApiKeyAuthenticator } from './api-key-authenticator.service';
import { hashApiKey } from './api-key-secret';

/** The key a check found (`null`: unknown or revoked). */
async function keyOf(authenticator: ApiKeyAuthenticator, presented: string) {
  return (await authenticator.check(presented)).key;
}

describe('ApiKeyAuthenticator', () => {
  const realKey = 'vak_live_the-one-real-key';
  let lookups: string[];
  let dataSource: DataSource;
  let authenticator: ApiKeyAuthenticator;

  beforeEach(() => {
    lookups = [];
    // Postgres knows one key: the stand-in answers the authenticator's one query as the table would.
    dataSource = {
      query: async (_sql: string, [hash]: [string]) => {
        lookups.push(hash);
        return hash === hashApiKey(realKey) ? [{ id: 1, organization_id: 7, role: 'admin', workflow_ids: null }] : [];
      },
    } as unknown as DataSource;
    // A TTL no run of these tests outlasts: the flood below takes seconds on a busy machine (past 5 s once in CI), and
    // what it tests is room, not time.
    authenticator = new ApiKeyAuthenticator(dataSource, { apiKeyCacheTtlMs: 600_000 } as AppConfig);
  });

  it('keeps a real key cached through a flood of made-up keys', async () => {
    expect(await keyOf(authenticator, realKey)).toMatchObject({ organizationId: 7, role: 'admin' });
    for (let index = 0; index < 12_000; index++) {
      expect(await keyOf(authenticator, `vak_live_${randomBytes(12).toString('hex')}`)).toBeNull();
    }
    const before = lookups.length;
    expect(await keyOf(authenticator, realKey)).toMatchObject({ organizationId: 7 });
    expect(lookups.length).toBe(before);
  });

  it('keeps a real key cached while a flood of made-up keys is looked up all at once', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let realLookups = 0;
    // Lookups of unknown keys wait in the pool, as they do when thousands arrive at once.
    const dataSource = {
      query: async (_sql: string, [hash]: [string]) => {
        if (hash === hashApiKey(realKey)) {
          realLookups += 1;
          return [{ id: 1, organization_id: 7, role: 'admin', workflow_ids: null }];
        }
        await held;
        return [];
      },
    } as unknown as DataSource;
    const flooded = new ApiKeyAuthenticator(dataSource, { apiKeyCacheTtlMs: 600_000 } as AppConfig);
    await keyOf(flooded, realKey);
    const flood = Array.from({ length: 12_000 }, () => keyOf(flooded, `vak_live_${randomBytes(12).toString('hex')}`));
    expect(await keyOf(flooded, realKey)).toMatchObject({ organizationId: 7 });
    expect(realLookups).toBe(1);
    release();
    expect(new Set(await Promise.all(flood))).toEqual(new Set([null]));
    expect(await keyOf(flooded, realKey)).toMatchObject({ organizationId: 7 });
    expect(realLookups).toBe(1);
  });

  it('remembers an unknown key as unknown, and a key forgotten is looked up again', async () => {
    expect(await keyOf(authenticator, 'vak_live_nobody')).toBeNull();
    expect(await keyOf(authenticator, 'vak_live_nobody')).toBeNull();
    expect(lookups).toEqual([hashApiKey('vak_live_nobody')]);

    await keyOf(authenticator, realKey);
    authenticator.forget(hashApiKey(realKey));
    await keyOf(authenticator, realKey);
    expect(lookups.filter((hash) => hash === hashApiKey(realKey))).toHaveLength(2);
  });

  describe('a check kept for a request whose body is still arriving', () => {
    afterEach(() => jest.useRealTimers());

    it('is trusted as long as the lookup it rests on, not from when the request came: a cached one may be older', async () => {
      jest.useFakeTimers({ now: 1_000_000 });
      const cached = new ApiKeyAuthenticator(dataSource, { apiKeyCacheTtlMs: 2_000 } as AppConfig);
      const fresh = await cached.check(realKey);
      jest.advanceTimersByTime(1_900);
      // A request whose head comes near the end of the lookup's life is answered from the cache...
      const late = await cached.check(realKey);
      expect(lookups).toHaveLength(1);
      expect(late.key).toMatchObject({ organizationId: 7 });
      expect(cached.checkStillGood(late.check)).toBe(true);
      // ...and its check lapses with that lookup, 200 ms after the request came: the key may have been revoked
      // on another replica 2 s ago, and this replica must not let it through for 2 s more.
      jest.advanceTimersByTime(200);
      expect(cached.checkStillGood(late.check)).toBe(false);
      expect(cached.checkStillGood(fresh.check)).toBe(false);
      // Checked again, it is read from Postgres afresh, and trusted from then.
      const again = await cached.check(realKey);
      expect(lookups).toHaveLength(2);
      jest.advanceTimersByTime(1_900);
      expect(cached.checkStillGood(again.check)).toBe(true);
    });

    it('is not trusted once a key was revoked on this replica since', async () => {
      const { check } = await authenticator.check(realKey);
      expect(authenticator.checkStillGood(check)).toBe(true);
      authenticator.forget(hashApiKey('vak_live_some-other-key'));
      expect(authenticator.checkStillGood(check)).toBe(false);
    });
  });
});
