import { runChaos } from './chaos-run';

/**
 * `npm test` runs a small version; `npm run chaos` a larger one
 * (CHAOS_TRIGGERS, CHAOS_SECONDS, CHAOS_DIALERS, CHAOS_REDIS_RESTARTS override it).
 */
const triggers = Number(process.env.CHAOS_TRIGGERS ?? 60);
const fireSeconds = Number(process.env.CHAOS_SECONDS ?? 8);
const dialers = Number(process.env.CHAOS_DIALERS ?? 2);
const redisRestarts = Number(process.env.CHAOS_REDIS_RESTARTS ?? 1);

describe('chaos: dialers killed, Redis restarted, carrier throttling and failing', () => {
  it(
    'turns every accepted trigger into exactly one call attempt and ends every run',
    async () => {
      const result = await runChaos({
        triggers,
        fireSeconds,
        dialers,
        redisRestarts,
        settleTimeoutMs: 120_000,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write(
        `chaos: accepted=${result.accepted} dialer_stops=${result.dialerKills} (sigterm=${result.gracefulStops}, not_exit_0=${result.uncleanShutdowns}) redis_restarts=${result.redisRestarts} ` +
          `client_retries=${result.triggerRetries} statuses=${JSON.stringify(result.statuses)} seconds=${result.seconds}\n` +
          `lost=${result.lost} duplicated=${result.duplicated} stuck=${result.stuck}\n`,
      );
      expect(result.accepted).toBe(triggers);
      // The chaos happened: a round (every 0.6–1.4 s while triggers are fired) stops a dialer, and every third one,
      // from the second on, restarts Redis until it has been restarted as often as asked. The fire window (8 s here,
      // 40 s for `npm run chaos`) holds the rounds that takes; a shorter CHAOS_SECONDS may not, and fails here.
      expect(result.dialerKills).toBeGreaterThan(0);
      expect(result.redisRestarts).toBe(redisRestarts);
      // A dialer asked to stop with SIGTERM drains and exits 0. Not every run asks one: only every fourth round does,
      // and only when its victim has been up for 3 s, which a victim restarted by one of the rounds before may not
      // have been. So this holds for the graceful stops there were (result.gracefulStops, printed above), possibly none.
      expect(result.uncleanShutdowns).toBe(0);
      expect({ lost: result.lost, duplicated: result.duplicated, stuck: result.stuck }).toEqual({ lost: 0, duplicated: 0, stuck: 0 });
    },
    15 * 60 * 1000,
  );
});
