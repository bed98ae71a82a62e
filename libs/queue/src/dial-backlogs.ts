import { Injectable } from '@nestjs/common';
import { RedisClient, RedisScript } from './redis-client';

/**
 * How long an organization's count lives after its last dial job was
 * enqueued. Counts are kept exact where they can be (see `DialBacklogs`);
 * one that drifted (a job lost with Redis' data, a first pass whose
 * decrement failed) is forgotten once the organization has been quiet this
 * long.
 */
export const BACKLOG_COUNT_TTL_MS = 3_600_000;

/**
 * Counts new dial jobs into their organizations' backlogs and answers each
 * one's band, in order. KEYS[i] is an organization's backlog (a hash: band →
 * jobs of that band not yet taken up once), ARGV[1] the time to live and
 * ARGV[i + 1] how many new jobs of KEYS[i] there are, in the order the bands
 * are answered. A job's band is the bit length of its place in the backlog
 * (the 1st job is band 1, the 2nd and 3rd band 2, the 4th to 7th band 3, ...),
 * and never below the highest band the backlog holds, so that an
 * organization's jobs are not taken up before its own earlier ones.
 */
const COUNT_IN = `
local ttl = tonumber(ARGV[1])
local bands = {}
for k, key in ipairs(KEYS) do
  local held = redis.call('HGETALL', key)
  local total, top = 0, 0
  for i = 1, #held, 2 do
    local band, count = tonumber(held[i]), tonumber(held[i + 1])
    if count > 0 then
      total = total + count
      if band > top then top = band end
    end
  end
  local bandOfNext, bound = 1, 2
  while bound <= total + 1 do
    bandOfNext = bandOfNext + 1
    bound = bound * 2
  end
  local added = {}
  for i = 1, tonumber(ARGV[k + 1]) do
    local place = total + i
    while bound <= place do
      bandOfNext = bandOfNext + 1
      bound = bound * 2
    end
    local band = math.max(bandOfNext, top)
    added[band] = (added[band] or 0) + 1
    bands[#bands + 1] = band
  end
  for band, count in pairs(added) do
    redis.call('HINCRBY', key, band, count)
  end
  redis.call('PEXPIRE', key, ttl)
end
return bands
`;

/** Takes a job out of its organization's backlog, at its band; a count that would go below zero is dropped instead. */
const COUNT_OUT = `
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
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
 * organization's highest band still waiting, so an organization's calls
 * keep their order. Paced jobs keep their band when they come back from a
 * delay: a campaign's early calls, due at their instants, go before the
 * first passes of its later ones.
 */
@Injectable()
export class DialBacklogs {
  private readonly countInScript: RedisScript;
  private readonly countOutScript: RedisScript;

  constructor(private readonly client: RedisClient) {
    this.countInScript = client.script('vaDialBacklogIn', COUNT_IN, null);
    this.countOutScript = client.script('vaDialBacklogOut', COUNT_OUT, 1);
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

  /** A job of the organization, counted in at `band`, was taken up by a dialer (or dropped) before it was. */
  async countOut(organizationId: number, band: number): Promise<void> {
    await this.countOutScript([this.key(organizationId)], [String(band)]);
  }
}
