import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from './redis-client';

/**
 * Drops a configuration's reserved instant if it is still ahead, on Redis
 * time; answers 1 if it did. The next dial then reserves from now again.
 */
const FORGET_RESERVED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reserved = tonumber(redis.call('GET', KEYS[1]) or '0')
if reserved > now then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

/**
 * Each telephony configuration's pacing: the next free dial instant (GCRA's
 * theoretical arrival time), which the dialer's admission reserves from,
 * one `1 / calls_per_second` after another, on Redis time; and beside it,
 * the interval that instant was reserved at (a key of its own, so that the
 * instant reads as the number earlier releases wrote and read, during a
 * rolling upgrade too).
 */
@Injectable()
export class PacingInstants {
  private readonly forgetScript: RedisScript;

  constructor(private readonly client: RedisClient) {
    this.forgetScript = client.script('vaForgetReservedInstants', FORGET_RESERVED, 1);
  }

  key(configurationId: number): string {
    return this.client.keyFor('pace', configurationId);
  }

  /**
   * `<interval ms> <instant>`: the interval the next free instant was reserved
   * at, and that instant as written. `DialAdmission` paces a changed rate from
   * it while the instant is still that one.
   */
  intervalKey(configurationId: number): string {
    return this.client.keyFor('pace-interval', configurationId);
  }

  /**
   * Gives back every instant reserved past now: only for a configuration
   * none of whose runs is queued, since a queued run's dial job may be
   * waiting for its reserved instant. Answers whether the next free
   * instant was ahead of now (and so was dropped).
   */
  async forgetReserved(configurationId: number): Promise<boolean> {
    return (await this.forgetScript([this.key(configurationId)], [])) === 1;
  }
}
