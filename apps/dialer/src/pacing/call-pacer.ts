import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from '@app/queue';

/**
 * GCRA on Redis time: each call reserves the next free instant of its
 * configuration, one every 1/cps seconds, so the rate holds across every
 * dialer replica and calls are spread evenly instead of bursting at each
 * second's start.
 */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(tat, now)
local nextTat = slot + interval
redis.call('SET', KEYS[1], tostring(nextTat), 'PX', math.ceil(nextTat - now + 60000))
return {tostring(slot), tostring(now)}
`;

export interface PaceSlot {
  /** How long the caller must wait before dialing, in milliseconds (0: dial now). */
  waitMs: number;
}

@Injectable()
export class CallPacer {
  private readonly reserveScript: RedisScript;

  constructor(private readonly client: RedisClient) {
    this.reserveScript = client.script('vaPaceReserve', RESERVE, 1);
  }

  async reserve(configurationId: number, callsPerSecond: number): Promise<PaceSlot> {
    const interval = 1000 / Math.max(callsPerSecond, 0.001);
    const [slot, now] = (await this.reserveScript([this.client.keyFor('pace', configurationId)], [String(interval)])) as [string, string];
    return { waitMs: Math.max(0, Number(slot) - Number(now)) };
  }
}
