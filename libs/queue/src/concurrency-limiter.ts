import { Injectable } from '@nestjs/common';
import { RedisClient } from './redis-client';

/**
 * Compared as numbers: Redis 7.2 prints a score in its shortest form
 * (`…0.001`), earlier versions with 17 digits (`…0.0010000000000`), so a
 * lease read before a failover or an upgrade to another version is the same
 * number spelled otherwise.
 */
const RELEASE_LEASE = `
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
`;

/**
 * The concurrency slots of each configuration: a slot is a lease in a sorted
 * set scored by its expiry, taken by `DialAdmission`, released when the run
 * ends; a lost end event frees it once the lease runs out.
 */
@Injectable()
export class ConcurrencyLimiter {
  constructor(private readonly client: RedisClient) {}

  async release(configurationId: number, runId: number): Promise<void> {
    await this.client.redis.zrem(this.key(configurationId), String(runId));
  }

  /** The lease of the run's slot as Redis keeps it (its expiry), or null when the run holds none. */
  lease(configurationId: number, runId: number): Promise<string | null> {
    return this.client.redis.zscore(this.key(configurationId), String(runId));
  }

  /**
   * Frees the run's slot only while it holds `lease` (as `lease` read it): a
   * slot renewed since was taken again by an admission of the run, for a
   * dial that may be live now, and is that dial's to free.
   */
  async releaseLease(configurationId: number, runId: number, lease: string): Promise<void> {
    await this.client.redis.eval(RELEASE_LEASE, 1, this.key(configurationId), String(runId), lease);
  }

  async inUse(configurationId: number): Promise<number> {
    const key = this.key(configurationId);
    await this.client.redis.zremrangebyscore(key, '-inf', Date.now());
    return this.client.redis.zcard(key);
  }

  key(configurationId: number): string {
    return this.client.keyFor('slots', configurationId);
  }
}
