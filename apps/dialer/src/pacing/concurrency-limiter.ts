import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from '@app/queue';

/**
 * Caps calls that are live at once per configuration. A slot is a lease in a
 * sorted set scored by its expiry: it is released when the run ends, and a
 * lost end event frees it once the lease runs out.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease)
  return 1
end
return 0
`;

@Injectable()
export class ConcurrencyLimiter {
  private readonly acquireScript: RedisScript;

  constructor(private readonly client: RedisClient) {
    this.acquireScript = client.script('vaSlotAcquire', ACQUIRE, 1);
  }

  async acquire(configurationId: number, runId: number, max: number, leaseMs: number): Promise<boolean> {
    const granted = await this.acquireScript([this.key(configurationId)], [String(runId), String(max), String(Math.ceil(leaseMs))]);
    return granted === 1;
  }

  async release(configurationId: number, runId: number): Promise<void> {
    await this.client.redis.zrem(this.key(configurationId), String(runId));
  }

  async inUse(configurationId: number): Promise<number> {
    const key = this.key(configurationId);
    await this.client.redis.zremrangebyscore(key, '-inf', Date.now());
    return this.client.redis.zcard(key);
  }

  private key(configurationId: number): string {
    return this.client.keyFor('slots', configurationId);
  }
}
