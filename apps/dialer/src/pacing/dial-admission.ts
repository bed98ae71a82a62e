import { Injectable } from '@nestjs/common';
import { ConcurrencyLimiter, PacingInstants, RedisClient, RedisScript } from '@app/queue';
import { MIN_CALLS_PER_SECOND } from '@app/telephony';

/**
 * A pacing instant this close is waited for in place. A delayed job returns
 * to the back of the queue: behind a backlog it would come back after its
 * instant had passed, give it up and reserve another, so a busy
 * configuration would waste most of its instants and dial far below its rate.
 */
export const INLINE_PACING_WAIT_MS = 250;

/**
 * Lets a dial go out, in one step on Redis time, so a call costs one round
 * trip to Redis however many limits it passes:
 * 1. pacing (when asked for, ARGV[6] being the interval in ms): GCRA reserves
 *    the configuration's next free instant, one every 1/cps seconds, so the
 *    rate holds across every dialer replica and calls are spread evenly
 *    instead of bursting at each second's start. The instant is kept with
 *    the interval it was reserved at (KEYS[4], `<interval> <the instant>`):
 *    once `calls_per_second` changes, the next is one new interval after
 *    the last one reserved (raised from one call in 1,000 s to ten a second,
 *    the next call is 100 ms after the last, not 1,000 s; lowered, it waits
 *    the new interval). An instant more than ARGV[7] ms ahead is answered as a wait (the job is delayed, then asks again
 *    without pacing); a nearer one is the instant the checks below are made
 *    for, and the dial waits for it in place once admitted. A run that holds
 *    a slot already is not paced again: it was admitted once (its instant
 *    spent) and the attempt stopped before its claim (an error, a dialer that
 *    died). Paced behind a backlog, it would hold the slot unused until its
 *    new instant, and one failure of the database could hold every slot for
 *    as long as the backlog lasts. Its slot is kept, never dropped: it may be
 *    the slot of a call another job of the run has placed;
 * 2. at most `limit` dials of the configuration in any rolling `windowMs`
 *    (its `calls_per_second`, the way carriers count it), the dial counted at
 *    its instant. GCRA spreads the calls; this window is what holds when
 *    reserved instants come back late together (a delayed job returns behind
 *    a backlog), which would otherwise go out as one burst. Every dial
 *    counted after `instant - windowMs` shares a window with this one; one
 *    counted at a later instant (reserved before the configuration's instants
 *    were given back, see `PacingInstants.forgetReserved`) counts too.
 *    The set lives a window past the furthest instant any dial may be
 *    counted at (ARGV[7] ahead), so a later dial counted now cannot cut
 *    short the life of one counted ahead;
 * 3. a concurrency slot for the run, taken now. The set of slots lives as long
 *    as its longest lease: a shorter one (the configuration's maximum call
 *    duration lowered while longer calls are live) does not shorten it. Nor
 *    does a run's own slot renewed with a shorter lease (a retried or stalled
 *    job of a run whose call went out under the old maximum, after it was
 *    lowered): the slot may be that live call's, which the reaper judges by
 *    the maximum it was placed with. A renewal always changes the slot's
 *    score (by a microsecond at least), which is how the reaper's
 *    `releaseLease` tells a slot renewed since it read it. The slot's lease
 *    is answered as Redis keeps it, for `releaseLease`.
 * Waits are answered as text: a pacing interval may be a fraction of a millisecond.
 * Instants are stored as text too, in full (`exact`): Lua's `tostring` keeps
 * 14 digits, a tenth of a millisecond at today's epoch, which would round
 * each interval of a fast configuration (1/7000 s paced at 1/10000). What
 * the previous release stored (`tostring`) still reads as a number; an
 * instant without its interval (an earlier release's dialer reserved it, in
 * a rolling upgrade) is taken as reserved at the rate asked for.
 */
const ADMIT = `
local function exact(ms)
  return string.format('%.17g', ms)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = now
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
local holdsSlot = held ~= false and tonumber(held) > now
if ARGV[6] ~= '' and not holdsSlot then
  local stored = redis.call('GET', KEYS[3])
  local tat = tonumber(stored or '0')
  local spacing, mark = string.match(redis.call('GET', KEYS[4]) or '', '^(%S+) (%S+)$')
  if spacing and spacing ~= ARGV[6] and mark == stored then
    -- Reserved at another rate (calls_per_second changed since): one interval of this rate after the last instant
    -- reserved, which is where the next free instant was, less an interval of that rate. Only while the instant is
    -- the one written with that interval: a dialer of an earlier release (a rolling upgrade) moves it on without.
    tat = tat - tonumber(spacing) + tonumber(ARGV[6])
  end
  at = math.max(tat, now)
  local nextTat = exact(at + tonumber(ARGV[6]))
  local life = math.ceil(tonumber(nextTat) - now + 60000)
  redis.call('SET', KEYS[3], nextTat, 'PX', life)
  redis.call('SET', KEYS[4], ARGV[6] .. ' ' .. nextTat, 'PX', life)
  if at - now > tonumber(ARGV[7]) then
    return {2, tostring(at - now)}
  end
end
local lease = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local since = '(' .. exact(at - window)
if redis.call('ZCOUNT', KEYS[2], since, '+inf') >= tonumber(ARGV[5]) then
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[2], since, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return {0, tostring(tonumber(oldest[2]) + window - now)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not (holdsSlot or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2])) then
  return {-1, '0'}
end
local expiry = now + lease
if holdsSlot then
  -- Never shorter than the slot held, and never the same score: a renewal must show to ConcurrencyLimiter.releaseLease.
  expiry = math.max(expiry, tonumber(held) + 0.001)
end
redis.call('ZADD', KEYS[1], exact(expiry), ARGV[1])
if redis.call('PTTL', KEYS[1]) < expiry - now then
  redis.call('PEXPIRE', KEYS[1], math.ceil(expiry - now))
end
redis.call('ZADD', KEYS[2], at, ARGV[1] .. ':' .. t[1] .. t[2])
redis.call('PEXPIRE', KEYS[2], window + tonumber(ARGV[7]))
return {1, tostring(at - now), redis.call('ZSCORE', KEYS[1], ARGV[1]), tostring(now)}
`;

export type Admission =
  /**
   * The dial may go out once its reserved instant, `waitMs` ahead (at most
   * INLINE_PACING_WAIT_MS; 0 without pacing), has come: its slot and its place
   * in the rolling window are taken.
   */
  | {
      kind: 'admitted';
      waitMs: number;
      /**
       * The run's slot as this admission left it (its expiry, as Redis keeps
       * it): a dial that does not go out frees it with `releaseLease`, and so
       * leaves alone a slot another job of the run has renewed since.
       */
      lease: string;
      /** When Redis admitted it, by its clock (epoch ms). */
      admittedAtMs: number;
    }
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
  // The API's floor (one call every 1,000 s), for a row stored before it was checked: a window past the integers
  // Redis' PEXPIRE takes would fail every dial of the configuration.
  return { limit: 1, windowMs: Math.ceil(1000 / Math.max(callsPerSecond, MIN_CALLS_PER_SECOND)) };
}

@Injectable()
export class DialAdmission {
  private readonly admitScript: RedisScript;

  constructor(
    private readonly client: RedisClient,
    private readonly slots: ConcurrencyLimiter,
    private readonly instants: PacingInstants,
  ) {
    this.admitScript = client.script('vaDialAdmit', ADMIT, 4);
  }

  /** `pace`: reserve the configuration's next pacing instant first (a dial that has one reserved already does not). */
  async admit(configurationId: number, runId: number, limits: AdmissionLimits, pace: boolean): Promise<Admission> {
    const { limit, windowMs } = rateWindow(limits.callsPerSecond);
    const interval = pace ? String(1000 / Math.max(limits.callsPerSecond, MIN_CALLS_PER_SECOND)) : '';
    const [verdict, wait, lease, admittedAt] = (await this.admitScript(
      [
        this.slots.key(configurationId),
        this.client.keyFor('dials', configurationId),
        this.instants.key(configurationId),
        this.instants.intervalKey(configurationId),
      ],
      [
        String(runId),
        String(limits.maxConcurrentCalls),
        String(Math.ceil(limits.leaseMs)),
        String(windowMs),
        String(limit),
        interval,
        String(INLINE_PACING_WAIT_MS),
      ],
    )) as [number, string, string?, string?];
    switch (verdict) {
      case 1:
        return { kind: 'admitted', waitMs: Number(wait), lease: lease!, admittedAtMs: Number(admittedAt) };
      case 2:
        return { kind: 'paced', waitMs: Number(wait) };
      case 0:
        return { kind: 'rate', waitMs: Math.max(1, Number(wait)) };
      default:
        return { kind: 'concurrency' };
    }
  }
}
