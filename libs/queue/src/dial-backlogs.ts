import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from './redis-client';

/**
 * How long a band's count lives after the last job counted into it, and
 * the organization's backlog after its last count. Counts are kept exact
 * where they can be (see `DialBacklogs`); one that drifted (a job lost with
 * Redis' data, a gateway that stopped between counting a group in and
 * enqueueing it, a count-out that failed) is forgotten this long after its
 * band was last used, so it cannot hold an organization's later calls in a
 * high band for longer than that.
 */
export const BACKLOG_COUNT_TTL_MS = 900_000;

/**
 * Counts new dial jobs into their organizations' backlogs and answers each
 * one's band, in order. KEYS[i] is an organization's backlog, a hash of
 * `<band>` → jobs of that band not yet taken up once, and `at:<band>` → when
 * a job was last counted into that band (ms, Redis time). ARGV[1] is the
 * time to live (`BACKLOG_COUNT_TTL_MS`) and ARGV[i + 1] how many new jobs of
 * KEYS[i] there are, in the order the bands are answered. A job's band is
 * the bit length of its place in the backlog (the 1st job is band 1, the 2nd
 * and 3rd band 2, the 4th to 7th band 3, ...), and never below the highest
 * band the backlog holds, so that an organization's jobs are not taken up
 * before its own earlier ones. A band last counted into longer than the time
 * to live ago is forgotten first: counted into as its jobs' own band, that is.
 * Jobs lifted into it (the highest band held) do not keep it alive, or a
 * count that drifted there would, with every later call of a busy
 * organization, hold all of them in that band for good.
 */
const COUNT_IN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local bands = {}
for k, key in ipairs(KEYS) do
  local held = redis.call('HGETALL', key)
  local fields = {}
  for i = 1, #held, 2 do
    fields[held[i]] = held[i + 1]
  end
  local total, top = 0, 0
  for field, value in pairs(fields) do
    local band = tonumber(field)
    if band then
      local at = tonumber(fields['at:' .. field] or '0')
      if now - at > ttl then
        redis.call('HDEL', key, field, 'at:' .. field)
      elseif tonumber(value) > 0 then
        total = total + tonumber(value)
        if band > top then top = band end
      end
    end
  end
  local bandOfNext, bound = 1, 2
  while bound <= total + 1 do
    bandOfNext = bandOfNext + 1
    bound = bound * 2
  end
  local added, own = {}, {}
  for i = 1, tonumber(ARGV[k + 1]) do
    local place = total + i
    while bound <= place do
      bandOfNext = bandOfNext + 1
      bound = bound * 2
    end
    local band = math.max(bandOfNext, top)
    added[band] = (added[band] or 0) + 1
    if band == bandOfNext then own[band] = true end
    bands[#bands + 1] = band
  end
  for band, count in pairs(added) do
    redis.call('HINCRBY', key, band, count)
    if own[band] then
      redis.call('HSET', key, 'at:' .. band, now)
    else
      redis.call('HSETNX', key, 'at:' .. band, now)
    end
  end
  redis.call('PEXPIRE', key, ttl)
end
return bands
`;

/**
 * Takes one job out of its organization's backlog (KEYS[1]) at its band; a
 * count that would go below zero is dropped instead. With a job's hash
 * (KEYS[2], BullMQ's), the band is the job's priority, and the job is taken
 * out once only, however many times it is asked (a stalled job run again, a
 * cancel racing the dialer): the hash keeps a mark. Without one, ARGV[1] is
 * the band (a job counted in, then not enqueued).
 */
const COUNT_OUT = `
local band = ARGV[1]
if #KEYS == 2 then
  band = redis.call('HGET', KEYS[2], 'priority')
  if not band or band == '0' or redis.call('HSETNX', KEYS[2], 'backlogOut', 1) == 0 then
    return 0
  end
end
if redis.call('HINCRBY', KEYS[1], band, -1) <= 0 then
  redis.call('HDEL', KEYS[1], band, 'at:' .. band)
end
return 1
`;

/**
 * Fairness between organizations on the shared `calls` queue. Each
 * organization's backlog is the count of its dial jobs not yet taken up by
 * a dialer once (their first pass, when a paced job reserves its instant and
 * is delayed to it). A new job gets the priority of its band in that
 * backlog, which grows with the bit length of its place: an organization's
 * first call is band 1, its 1,000th band 10, its 100,000th band 17. BullMQ
 * takes lower bands first, and jobs of one band in the order they were
 * enqueued (or came back from a delay), so a call triggered by one
 * organization behind another's campaign of 100,000 goes before all but
 * that campaign's first one, and two campaigns share the dialers alike
 * until the smaller one is through. A job is never banded below its own
 * organization's highest band still waiting, so an organization's first
 * passes keep their order. Paced jobs keep their band when they come back
 * from a delay: a campaign's early calls, due at their instants, go before
 * the first passes of its later ones.
 */
@Injectable()
export class DialBacklogs {
  private readonly countInScript: RedisScript;
  private readonly countOutScript: RedisScript;

  constructor(private readonly client: RedisClient) {
    this.countInScript = client.script('vaDialBacklogIn', COUNT_IN, null);
    this.countOutScript = client.script('vaDialBacklogOut', COUNT_OUT, null);
  }

  key(organizationId: number): string {
    return this.client.keyFor('backlog', organizationId);
  }

  /** Counts new jobs of these organizations (one entry per job) into their backlogs; answers each job's band, in order. */
  async countIn(organizationIds: readonly number[]): Promise<number[]> {
    const order: number[] = [];
    const counts = new Map<number, number>();
    for (const organizationId of organizationIds) {
      if (!counts.has(organizationId)) order.push(organizationId);
      counts.set(organizationId, (counts.get(organizationId) ?? 0) + 1);
    }
    const keys = order.map((organizationId) => this.key(organizationId));
    const args = [String(BACKLOG_COUNT_TTL_MS), ...order.map((organizationId) => String(counts.get(organizationId)))];
    const bands = (await this.countInScript(keys, args)) as number[];
    // The script answers the bands organization by organization; hand them out in the jobs' order.
    const next = new Map<number, number>();
    let offset = 0;
    for (const organizationId of order) {
      next.set(organizationId, offset);
      offset += counts.get(organizationId)!;
    }
    return organizationIds.map((organizationId) => {
      const index = next.get(organizationId)!;
      next.set(organizationId, index + 1);
      return bands[index];
    });
  }

  /**
   * The job (its hash, `jobKey`) was taken up by a dialer, or is being
   * dropped, before it was: out of its organization's backlog, at its
   * priority, once only. Answers whether this call took it out.
   */
  async countOutJob(organizationId: number, jobKey: string): Promise<boolean> {
    return (await this.countOutScript([this.key(organizationId), jobKey], [''])) === 1;
  }

  /** A job counted in at `band` was not enqueued after all (its run was not stored): out of the backlog again. */
  async uncount(organizationId: number, band: number): Promise<void> {
    await this.countOutScript([this.key(organizationId)], [String(band)]);
  }
}
