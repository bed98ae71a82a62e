import { BACKLOG_COUNT_TTL_MS, DialBacklogs, RedisClient } from '@app/queue';
import { ownRedisClient } from '../support/own-redis-client';

describe("organizations' dial backlogs: each new job's band", () => {
  let client: RedisClient;
  let drop: () => Promise<void>;
  let backlogs: DialBacklogs;
  let organizationId = 0;

  beforeAll(() => {
    ({ client, drop } = ownRedisClient('backlogs'));
    backlogs = new DialBacklogs(client);
  });

  afterAll(() => drop());

  // Each test counts organizations of its own.
  function organization(): number {
    organizationId += 1;
    return organizationId;
  }

  /** The backlog's count per band (without the times each band was last counted into). */
  async function counts(org: number): Promise<Record<string, string>> {
    const held = await client.redis.hgetall(backlogs.key(org));
    return Object.fromEntries(Object.entries(held).filter(([field]) => !field.startsWith('at:')));
  }

  it("bands a job by the bit length of its place in its organization's backlog", async () => {
    const org = organization();
    expect(await backlogs.countIn(Array(8).fill(org))).toEqual([1, 2, 2, 3, 3, 3, 3, 4]);
    // Counted across calls: the 9th to 15th are band 4, the 16th and 17th band 5.
    expect(await backlogs.countIn(Array(9).fill(org))).toEqual([4, 4, 4, 4, 4, 4, 4, 5, 5]);
    expect(await counts(org)).toEqual({ 1: '1', 2: '2', 3: '4', 4: '8', 5: '2' });
  });

  it('counts each organization on its own, and answers the bands in the order of the jobs asked for', async () => {
    const [a, b] = [organization(), organization()];
    await backlogs.countIn([a, a, a]);
    expect(await backlogs.countIn([b, a, b, a, b])).toEqual([1, 3, 2, 3, 2]);
  });

  it('bands a job by the backlog left once earlier jobs are taken up', async () => {
    const org = organization();
    expect(await backlogs.countIn([org, org])).toEqual([1, 2]);
    await backlogs.uncount(org, 1);
    await backlogs.uncount(org, 2);
    expect(await client.redis.hlen(backlogs.key(org))).toBe(0);
    expect(await backlogs.countIn([org])).toEqual([1]);
  });

  it("never bands a job below its organization's highest band still waiting", async () => {
    const org = organization();
    expect(await backlogs.countIn([org, org, org, org])).toEqual([1, 2, 2, 3]);
    await backlogs.uncount(org, 1);
    await backlogs.uncount(org, 2);
    await backlogs.uncount(org, 2);
    // One job is left, at band 3: the next is the 2nd in the backlog (band 2), but must not go before it.
    expect(await backlogs.countIn([org, org])).toEqual([3, 3]);
  });

  it('drops a count that would go below zero (a job counted out twice) instead of keeping it negative', async () => {
    const org = organization();
    await backlogs.countIn([org]);
    await backlogs.uncount(org, 1);
    await backlogs.uncount(org, 1);
    await backlogs.uncount(org, 4);
    expect(await client.redis.hgetall(backlogs.key(org))).toEqual({});
    expect(await backlogs.countIn([org, org])).toEqual([1, 2]);
  });

  it("lets an organization's backlog expire once it has counted nothing in for the count's time to live", async () => {
    const org = organization();
    await backlogs.countIn([org]);
    const ttl = await client.redis.pttl(backlogs.key(org));
    expect(ttl).toBeGreaterThan(BACKLOG_COUNT_TTL_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(BACKLOG_COUNT_TTL_MS);
  });

  it('forgets a band nothing was counted into for the time to live, however busy the other bands are', async () => {
    const org = organization();
    expect(await backlogs.countIn(Array(5).fill(org))).toEqual([1, 2, 2, 3, 3]);
    // A count left behind at band 3 (its jobs' count-outs lost), last counted into longer ago than the time to live.
    await backlogs.uncount(org, 1);
    await backlogs.uncount(org, 2);
    await backlogs.uncount(org, 2);
    const [seconds] = await client.redis.time();
    await client.redis.hset(backlogs.key(org), 'at:3', String(Number(seconds) * 1000 - BACKLOG_COUNT_TTL_MS - 1000));
    expect(await backlogs.countIn([org])).toEqual([1]);
    expect(await counts(org)).toEqual({ 1: '1' });
  });

  it('does not keep a drifted band alive with the jobs lifted into it: a busy organization is back in band 1 once it expires', async () => {
    const org = organization();
    expect(await backlogs.countIn(Array(5).fill(org))).toEqual([1, 2, 2, 3, 3]);
    // Every job but one of band 3 counted out: that one's count-out was lost, and band 3 holds a count no job has.
    for (const band of [1, 2, 2, 3]) await backlogs.uncount(org, band);
    // Last counted into as its own band almost the time to live ago.
    const [seconds, micros] = await client.redis.time();
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await client.redis.hset(backlogs.key(org), 'at:3', String(nowMs - BACKLOG_COUNT_TTL_MS + 500));
    // The organization goes on calling: each call is lifted into band 3 (never below its highest band) and taken up.
    expect(await backlogs.countIn([org])).toEqual([3]);
    await backlogs.uncount(org, 3);
    await new Promise((resolve) => setTimeout(resolve, 700));
    // Those calls did not keep the drifted count alive: it is forgotten, and the next call is band 1 again.
    expect(await backlogs.countIn([org])).toEqual([1]);
    expect(await counts(org)).toEqual({ 1: '1' });
  });

  describe("a job's count-out, at its priority, by its hash", () => {
    const jobKey = (name: string) => client.keyFor('calls', `backlog-test-${name}`);

    it('takes the job out once, however many times it is asked', async () => {
      const org = organization();
      expect(await backlogs.countIn([org, org, org])).toEqual([1, 2, 2]);
      await client.redis.hset(jobKey('once'), 'priority', '2');
      expect(await backlogs.countOutJob(org, jobKey('once'))).toBe(true);
      expect(await backlogs.countOutJob(org, jobKey('once'))).toBe(false);
      expect(await counts(org)).toEqual({ 1: '1', 2: '1' });
    });

    it('takes nothing out for a job that is gone, or was added without a priority, and leaves no hash behind', async () => {
      const org = organization();
      await backlogs.countIn([org]);
      expect(await backlogs.countOutJob(org, jobKey('gone'))).toBe(false);
      expect(await client.redis.exists(jobKey('gone'))).toBe(0);
      await client.redis.hset(jobKey('unbanded'), 'priority', '0');
      expect(await backlogs.countOutJob(org, jobKey('unbanded'))).toBe(false);
      expect(await counts(org)).toEqual({ 1: '1' });
    });
  });
});
