import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AppConfig } from '@app/config';
import { TriggerLookups } from './trigger-lookups.service';

describe('TriggerLookups', () => {
  const realUuid = '3f2b8c1e-0d4a-4c6b-9e7f-1a2b3c4d5e6f';
  let release: () => void;
  let queries: { triggers: number; configurations: number };
  let lookups: TriggerLookups;

  beforeEach(() => {
    const held = new Promise<void>((resolve) => (release = resolve));
    queries = { triggers: 0, configurations: 0 };
    // Postgres knows one trigger and one configuration; look-ups of anything else wait in the pool, as thousands
    // arriving at once do.
    const dataSource = {
      query: async (sql: string, params: unknown[]) => {
        if (sql.includes('FROM api_triggers')) {
          if (params[0] !== realUuid) return held.then(() => []);
          queries.triggers += 1;
          return [{ uuid: realUuid, organization_id: 7, workflow_id: 3, is_active: true, status: 'published', has_trigger: true }];
        }
        if (params[0] !== 11) return held.then(() => []);
        queries.configurations += 1;
        return [{ id: 11, provider: 'sandbox', fromNumbers: ['+14155550100'] }];
      },
    } as unknown as DataSource;
    // A TTL no run of this test outlasts: what it tests is room, not time.
    lookups = new TriggerLookups(dataSource, { lookupCacheTtlMs: 600_000 } as AppConfig);
  });

  it('keeps a real trigger cached while a flood of made-up UUIDs is looked up all at once', async () => {
    await lookups.trigger(realUuid);
    const flood = Array.from({ length: 12_000 }, () => lookups.trigger(randomUUID()).catch((error: { code?: string }) => error.code));
    expect(await lookups.trigger(realUuid)).toMatchObject({ organizationId: 7, workflowId: 3 });
    release();
    expect(new Set(await Promise.all(flood))).toEqual(new Set(['trigger_not_found']));
    await lookups.trigger(realUuid);
    expect(queries.triggers).toBe(1);
  });

  it('keeps a real configuration cached while a flood of made-up configuration ids is looked up', async () => {
    await lookups.configuration(7, 11);
    const flood = Array.from({ length: 12_000 }, (_, index) =>
      lookups.configuration(7, 1_000 + index).catch((error: { code?: string }) => error.code),
    );
    expect(await lookups.configuration(7, 11)).toMatchObject({ id: 11 });
    release();
    expect(new Set(await Promise.all(flood))).toEqual(new Set(['telephony_configuration_not_found']));
    await lookups.configuration(7, 11);
    expect(queries.configurations).toBe(1);
  });
});
