import { QUIET_SECONDS_NEEDED, runChaos } from './chaos-run';

/**
 * `npm test` runs a small version; `npm run chaos` a larger one, and `npm run
 * chaos:full-speed` one at the bench's pace (CHAOS_TRIGGERS, CHAOS_SECONDS,
 * CHAOS_DIALERS, CHAOS_REDIS_RESTARTS, CHAOS_SETTLE_SECONDS, CHAOS_QUIET_SECONDS, CHAOS_FULL_SPEED override it;
 * CHAOS_KEEP_DATA=1 leaves its database in place). Once every run ended, the dials are counted again
 * CHAOS_QUIET_SECONDS after the last dialer stop or Redis restart: shorter than QUIET_SECONDS_NEEDED may miss a
 * late duplicate.
 */
const triggers = Number(process.env.CHAOS_TRIGGERS ?? 60);
const fireSeconds = Number(process.env.CHAOS_SECONDS ?? 8);
const dialers = Number(process.env.CHAOS_DIALERS ?? 2);
const redisRestarts = Number(process.env.CHAOS_REDIS_RESTARTS ?? 1);
const settleSeconds = Number(process.env.CHAOS_SETTLE_SECONDS ?? 120);
const quietSeconds = Number(process.env.CHAOS_QUIET_SECONDS ?? QUIET_SECONDS_NEEDED + 5);
const fullSpeed = process.env.CHAOS_FULL_SPEED === '1';
const keepData = process.env.CHAOS_KEEP_DATA === '1';

describe('chaos: dialers killed, Redis restarted, carrier throttling and failing', () => {
  it(
    'turns every accepted trigger into exactly one call attempt and ends every run',
    async () => {
      const result = await runChaos({
        triggers,
        fireSeconds,
        fullSpeed,
        keepData,
        dialers,
        redisRestarts,
        settleTimeoutMs: settleSeconds * 1000,
        quietSeconds,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write(
        `chaos: accepted=${result.accepted} triggers_per_second=${result.triggersPerSecond} dialer_stops=${result.dialerKills} (sigterm=${result.gracefulStops}, not_exit_0=${result.uncleanShutdowns}) redis_restarts=${result.redisRestarts} ` +
          `open_at_redis_restarts=${result.openAtRedisRestarts.join(',')} ` +
          `client_retries=${result.triggerRetries} statuses=${JSON.stringify(result.statuses)} seconds=${result.seconds}\n` +
          `lost=${result.lost} duplicated=${result.duplicated} stuck=${result.stuck}\n` +
          `runs_created=${result.runsCreated} ledger_rows=${result.ledgerRows} ledger_runs=${result.ledgerRuns} ` +
          `duplicate_dials=${result.ledgerRows - result.ledgerRuns} late_dials=${result.lateDials} (counted again ${quietSeconds} s after the last stop or restart)\n`,
      );
      expect(result.accepted).toBe(triggers);
      // The chaos happened: a round (every 0.6–1.4 s while triggers are fired; at full speed every 2–4 s, while they
      // are fired and for CHAOS_SECONDS at least) stops a dialer, and every third one, from the second on, restarts
      // Redis until it has been restarted as often as asked. The window (8 s here, 40 s for `npm run chaos`, 30 s at
      // full speed) holds the rounds that takes; a shorter CHAOS_SECONDS may not, and fails here.
      expect(result.dialerKills).toBeGreaterThan(0);
      expect(result.redisRestarts).toBe(redisRestarts);
      // A dialer asked to stop with SIGTERM drains and exits 0. Not every run asks one: only every fourth round does,
      // and only when its victim has been up for 3 s, which a victim restarted by one of the rounds before may not
      // have been. So this holds for the graceful stops there were (result.gracefulStops, printed above), possibly none.
      expect(result.uncleanShutdowns).toBe(0);
      expect({ lost: result.lost, duplicated: result.duplicated, stuck: result.stuck }).toEqual({ lost: 0, duplicated: 0, stuck: 0 });
      // The same over everything the test's workflows hold, not only the run ids the client was answered: one run
      // per accepted trigger, one ledger row per run, and no dial landing after the runs ended.
      expect({ runs: result.runsCreated, ledgerRows: result.ledgerRows, ledgerRuns: result.ledgerRuns, lateDials: result.lateDials }).toEqual({
        runs: result.accepted,
        ledgerRows: result.accepted,
        ledgerRuns: result.accepted,
        lateDials: 0,
      });
    },
    15 * 60 * 1000,
  );
});
