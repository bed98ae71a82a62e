import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from '@app/queue';
import { ConcurrencyLimiter } from './concurrency-limiter';

/**
 * Lets a dial go out, in one step on Redis time, so a call costs one round
 * trip to Redis however many limits it passes:
 * 1. pacing (when asked for, ARGV[6] being the interval in ms): GCRA reserves
 *    the configuration's next free instant, one every 1/cps seconds, so the
 *    rate holds across every dialer replica and calls are spread evenly
 *    instead of bursting at each second's start. An instant still ahead is
 *    answered as a wait (the caller waits, then asks again without pacing);
 * 2. at most `limit` dials of the configuration in any rolling `windowMs`
 *    (its `calls_per_second`, the way carriers count it). GCRA spreads the
 *    calls; this window is what holds when reserved instants come back late
 *    together (a delayed job returns behind a backlog), which would otherwise
 *    go out as one burst;
 * 3. a concurrency slot for the run.
 * Waits are answered as text: a pacing interval may be a fraction of a millisecond.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[6] ~= '' then
  local tat = tonumber(redis.call('GET', KEYS[3]) or '0')
  local slot = math.max(tat, now)
  local nextTat = slot + tonumber(ARGV[6])
  redis.call('SET', KEYS[3], tostring(nextTat), 'PX', math.ceil(nextTat - now + 60000))
  if slot > now then
    return {2, tostring(slot - now)}
  end
end
local lease = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, tostring(tonumber(oldest[2]) + window - now)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not (redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2])) then
  return {-1, '0'}
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. t[1] .. t[2])
redis.call('PEXPIRE', KEYS[2], window)
return {1, '0'}
`;

export type Admission =
  | { kind: 'admitted' }
  /** The pacing instant reserved for this dial is `waitMs` ahead: dial then, without pacing again. */
  | { kind: 'paced'; waitMs: number }
  /** The rolling window is full for `waitMs` more. */
  | { kind: 'rate'; waitMs: number }
  | { kind: 'concurrency' };

export interface AdmissionLimits {
  callsPerSecond: number;
  maxConcurrentCalls: number;
  /** How long the slot is held if no end event ever frees it. */
  leaseMs: number;
}

/**
 * `calls_per_second` as carriers count it, in whole calls: at most
 * ceil(cps) dials in any second (GCRA keeps the average at cps); below one
 * call a second, one dial in any 1/cps seconds.
 */
export function rateWindow(callsPerSecond: number): { limit: number; windowMs: number } {
  if (callsPerSecond >= 1) return { limit: Math.ceil(callsPerSecond), windowMs: 1000 };
  return { limit: 1, windowMs: Math.ceil(1000 / callsPerSecond) };
}

@Injectable()
export class DialAdmission {
  private readonly admitScript: RedisScript;

  constructor(
    private readonly client: RedisClient,
    private readonly slots: ConcurrencyLimiter,
  ) {
    this.admitScript = client.script('vaDialAdmit', ADMIT, 3);
  }

  /** `pace`: reserve the configuration's next pacing instant first (a dial that has one reserved already does not). */
  async admit(configurationId: number, runId: number, limits: AdmissionLimits, pace: boolean): Promise<Admission> {
    const { limit, windowMs } = rateWindow(limits.callsPerSecond);
    const interval = pace ? String(1000 / Math.max(limits.callsPerSecond, 0.001)) : '';
    const [verdict, wait] = (await this.admitScript(
      [this.slots.key(configurationId), this.client.keyFor('dials', configurationId), this.client.keyFor('pace', configurationId)],
      [String(runId), String(limits.maxConcurrentCalls), String(Math.ceil(limits.leaseMs)), String(windowMs), String(limit), interval],
    )) as [number, string];
    switch (verdict) {
      case 1:
        return { kind: 'admitted' };
      case 2:
        return { kind: 'paced', waitMs: Number(wait) };
      case 0:
        return { kind: 'rate', waitMs: Math.max(1, Number(wait)) };
      default:
        return { kind: 'concurrency' };
    }
  }
}
