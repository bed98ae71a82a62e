import { Injectable } from '@nestjs/common';
import { RedisClient } from './redis-client';

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

  async inUse(configurationId: number): Promise<number> {
    const key = this.key(configurationId);
    await this.client.redis.zremrangebyscore(key, '-inf', Date.now());
    return this.client.redis.zcard(key);
  }

  key(configurationId: number): string {
    return this.client.keyFor('slots', configurationId);
  }
}
