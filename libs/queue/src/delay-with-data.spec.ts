import { Job, Queue, Worker } from 'bullmq';
import Redis from 'ioredis';
import { testConfig } from '../../../test/support/test-config';
import { delayWithData } from './delay-with-data';

/** Against this test run's Redis, under a queue of its own in the run's prefix. */
describe('delayWithData', () => {
  const config = testConfig();
  const name = `delay-with-data-${Date.now()}`;
  let connection: Redis;
  let queue: Queue<{ step: number }>;
  let worker: Worker<{ step: number }>;

  beforeAll(() => {
    connection = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue(name, { connection, prefix: config.queuePrefix });
    // Not run: jobs are taken by hand, with a token of the test's choosing.
    worker = new Worker(name, null, { connection, prefix: config.queuePrefix, autorun: false });
  });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await worker.close();
    await queue.close();
    connection.disconnect();
  });

  async function taken(token: string): Promise<Job<{ step: number }>> {
    await queue.add('job', { step: 1 }, { jobId: `${token}-job` });
    const job = await worker.getNextJob(token);
    expect(job?.id).toBe(`${token}-job`);
    return job!;
  }

  it('delays a job it holds with its new data, without spending an attempt', async () => {
    const job = await taken('held');
    const untilMs = Date.now() + 60_000;
    await delayWithData(job, { step: 2 }, untilMs, 'held');
    const stored = await queue.getJob(job.id!);
    expect(await stored!.getState()).toBe('delayed');
    expect(stored!.data).toEqual({ step: 2 });
    expect(stored!.attemptsMade).toBe(0);
  });

  it('writes nothing over the data of a job whose lock another worker took over', async () => {
    const job = await taken('lost');
    // Another dialer took the job over (the lock ran out while this one was cut off) and wrote its own data.
    await connection.set(`${config.queuePrefix}:${name}:${job.id}:lock`, 'other-token');
    await queue.getJob(job.id!).then((theirs) => theirs!.updateData({ step: 9 }));

    await expect(delayWithData(job, { step: 2 }, Date.now() + 60_000, 'lost')).rejects.toThrow();
    expect((await queue.getJob(job.id!))!.data).toEqual({ step: 9 });
  });
});
