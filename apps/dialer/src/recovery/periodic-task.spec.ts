import { RedisClient } from '@app/queue';
import { testConfig } from '../../../../test/support/test-config';
import { PeriodicTask } from './periodic-task';

/** Against this test run's Redis, under its queue prefix. */
describe('PeriodicTask', () => {
  let client: RedisClient;

  beforeAll(() => {
    client = new RedisClient(testConfig());
  });
  afterAll(() => client.onApplicationShutdown());

  it('keeps its lease through a round that outlasts it, so no other replica runs a round beside it', async () => {
    const name = `task-${Date.now()}`;
    const intervalMs = 100; // a lease of 1 s (its floor), renewed every 100 ms while a round runs
    const long = new PeriodicTask(name, intervalMs, client, () => new Promise((resolve) => setTimeout(resolve, 1600))).runOnce();
    await new Promise((resolve) => setTimeout(resolve, 1300)); // past the lease the round started with

    let otherRan = false;
    await new PeriodicTask(name, intervalMs, client, async () => {
      otherRan = true;
    }).runOnce();
    await long;

    expect(otherRan).toBe(false);
  });
});
