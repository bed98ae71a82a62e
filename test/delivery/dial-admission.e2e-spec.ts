import { AppConfig } from '@app/config';
import { RedisClient } from '@app/queue';
import { ConcurrencyLimiter } from '../../apps/dialer/src/pacing/concurrency-limiter';
import { AdmissionLimits, DialAdmission } from '../../apps/dialer/src/pacing/dial-admission';

const LEASE_MS = 60_000;

function limits(callsPerSecond: number, maxConcurrentCalls = 100): AdmissionLimits {
  return { callsPerSecond, maxConcurrentCalls, leaseMs: LEASE_MS };
}

describe('dial admission: pacing, the rate window and concurrency slots in one Redis step', () => {
  let client: RedisClient;
  let admission: DialAdmission;
  let configurationId = 0;

  beforeAll(() => {
    const config = { redisUrl: 'redis://127.0.0.1:6379', queuePrefix: `${process.env.TEST_QUEUE_PREFIX}-admission` } as AppConfig;
    client = new RedisClient(config);
    admission = new DialAdmission(client, new ConcurrencyLimiter(client));
  });

  afterAll(async () => {
    const keys = await client.redis.keys(`${client.keyFor('')}*`);
    if (keys.length) await client.redis.del(...keys);
    await client.onApplicationShutdown();
  });

  // Each test paces a configuration of its own.
  beforeEach(() => {
    configurationId += 1;
  });

  it('reserves the next pacing instant and admits the dial whose instant is now', async () => {
    expect(await admission.admit(configurationId, 1, limits(2), true)).toEqual({ kind: 'admitted' });
    const second = await admission.admit(configurationId, 2, limits(2), true);
    expect(second.kind).toBe('paced');
    // One dial every 500 ms: the second one's instant is about 500 ms ahead.
    expect((second as { waitMs: number }).waitMs).toBeGreaterThan(400);
    expect((second as { waitMs: number }).waitMs).toBeLessThanOrEqual(500);
    // A reserved instant is not paced again: the dial asks without pacing once it has waited.
    expect(await admission.admit(configurationId, 2, limits(2), false)).toEqual({ kind: 'admitted' });
  });

  it('keeps fractions of a millisecond in pacing waits', async () => {
    await admission.admit(configurationId, 1, limits(3), true);
    const second = (await admission.admit(configurationId, 2, limits(3), true)) as { kind: string; waitMs: number };
    const third = (await admission.admit(configurationId, 3, limits(3), true)) as { kind: string; waitMs: number };
    expect([second.kind, third.kind]).toEqual(['paced', 'paced']);
    // Instants 333.3 ms apart (less the few milliseconds between the two asks, on Redis' whole-millisecond
    // clock): a wait rounded to whole milliseconds would drift the rate over many calls.
    expect(Number.isInteger(second.waitMs)).toBe(false);
    expect(Number.isInteger(third.waitMs)).toBe(false);
    expect(third.waitMs - second.waitMs).toBeGreaterThan(1000 / 3 - 20);
    expect(third.waitMs - second.waitMs).toBeLessThanOrEqual(1000 / 3 + 0.001);
  });

  it('answers how long until the rolling window has room when it is full', async () => {
    expect(await admission.admit(configurationId, 1, limits(1), false)).toEqual({ kind: 'admitted' });
    const refused = await admission.admit(configurationId, 2, limits(1), false);
    expect(refused.kind).toBe('rate');
    expect((refused as { waitMs: number }).waitMs).toBeGreaterThan(900);
    expect((refused as { waitMs: number }).waitMs).toBeLessThanOrEqual(1000);
  });

  it('takes no concurrency slot for a dial the rolling window refuses', async () => {
    await admission.admit(configurationId, 1, limits(1), false);
    await admission.admit(configurationId, 2, limits(1), false);
    expect(await client.redis.zrange(client.keyFor('slots', configurationId), '0', '-1')).toEqual(['1']);
  });

  it('refuses a dial when every concurrency slot is taken, and renews the slot of a run that holds one', async () => {
    expect(await admission.admit(configurationId, 1, limits(100, 1), false)).toEqual({ kind: 'admitted' });
    expect(await admission.admit(configurationId, 2, limits(100, 1), false)).toEqual({ kind: 'concurrency' });
    expect(await admission.admit(configurationId, 1, limits(100, 1), false)).toEqual({ kind: 'admitted' });
  });
});
