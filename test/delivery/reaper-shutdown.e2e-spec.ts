import { TelephonyProviders } from '@app/telephony';
import { runsWhenComplete, seedForStrandedRuns, StrandedRunSeed, strandedRun } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** How long each of the reaper's carrier look-ups takes here: a round of RUNS runs takes RUNS times this at least. */
const LOOKUP_MS = 200;
const RUNS = 30;

/**
 * A dialer asked to stop while its reaper works through a round of stale
 * runs, each a carrier look-up, stops after the run in hand instead of
 * finishing the round (30 look-ups of 200 ms here, 6 s; under load a round of
 * 200 runs took past the 15 s a supervisor waits for a stop). The runs it
 * left are the next round's, on another dialer.
 */
describe('a dialer stopping in the middle of a reaper round', () => {
  let apps: TestApps;
  let seed: StrandedRunSeed;

  beforeAll(async () => {
    apps = await startTestApps({
      dialer: false,
      env: { REAPER_INTERVAL_MS: '200', RECONCILE_AFTER_SECONDS: '1', RING_TIMEOUT_SECONDS: '2' },
    });
    seed = await seedForStrandedRuns(apps.dataSource);
  });
  afterAll(() => apps.close());

  it('stops after the run in hand, and another dialer reaps the rest', async () => {
    const runIds: number[] = [];
    for (let i = 0; i < RUNS; i++) runIds.push(await strandedRun(apps.dataSource, seed, 'ringing', `SB-gone-${i}-${Date.now()}`));

    const stopping = await apps.addDialer();
    const sandbox = stopping.get(TelephonyProviders).get('sandbox');
    const lookupCall = sandbox.lookupCall.bind(sandbox);
    let lookups = 0;
    jest.spyOn(sandbox, 'lookupCall').mockImplementation(async (reference) => {
      lookups++;
      await new Promise((resolve) => setTimeout(resolve, LOOKUP_MS));
      return lookupCall(reference);
    });
    await waitFor(async () => (lookups >= 2 ? true : undefined), { what: 'the round under way' });

    await stopping.close();
    const lookupsAtStop = lookups;
    const ended = await endedAmong(runIds);

    // The round stopped short: the look-up in hand was finished, the rest of the round was not begun.
    expect(lookupsAtStop).toBeLessThan(RUNS);
    expect(ended).toBeLessThan(RUNS);
    expect(ended).toBeGreaterThanOrEqual(lookupsAtStop - 1);

    await apps.addDialer();
    const runs = await runsWhenComplete(apps.dataSource, runIds);
    expect(runs.every((run) => run.status === 'failed' && run.end_reason === 'ring_timeout')).toBe(true);
    // The stopped dialer looked nothing up after it stopped.
    expect(lookups).toBe(lookupsAtStop);
  });

  async function endedAmong(runIds: number[]): Promise<number> {
    const [row] = await apps.dataSource.query(`SELECT count(*)::int AS ended FROM workflow_runs WHERE id = ANY($1) AND is_completed`, [runIds]);
    return row.ended;
  }
});
