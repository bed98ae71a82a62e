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
      // A dialer asked to stop with SIGTERM drains and exits 0.
      expect(result.uncleanShutdowns).toBe(0);
      expect({ lost: result.lost, duplicated: result.duplicated, stuck: result.stuck }).toEqual({ lost: 0, duplicated: 0, stuck: 0 });
    },
    15 * 60 * 1000,
  );
});
