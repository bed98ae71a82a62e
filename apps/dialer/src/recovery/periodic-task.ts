import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { withTimeout } from '@app/common';
import { RedisClient, RedisScript } from '@app/queue';

/** How long a round keeps renewing its lease; at this age it is told to stop, and its lease lapses. */
const MAX_ROUND_MS = 10 * 60_000;
/** How long `stop` waits for the round in flight by default. */
export const STOP_WAIT_MS = 5_000;
/** How long it waits when Redis is away: the round then waits on it, and only the process closing ends that. */
const STOP_WAIT_REDIS_AWAY_MS = 500;
/** Rounds failed in a row after which a replica gives the task up for a while (`schedule`). */
export const FAILED_ROUNDS_BEFORE_HANDOVER = 3;
/**
 * How many lease lengths (three intervals) a replica that gave the task up
 * waits before it may take the lease again: every other replica tries once
 * an interval, so one of them has it by then; a replica alone loses no
 * more than that after an outage.
 */
const SIT_OUT_LEASES = 1;

/**
 * Takes the task's lease (KEYS[1]) for ARGV[1] (this replica) for ARGV[2] ms,
 * or extends it if this replica holds it already; answers 1 if it holds it
 * now. One step: a lease read as this replica's and then extended in a
 * second command could have gone to another replica in between, and been
 * extended for that one by this.
 */
const HOLD_LEASE = `
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`;

/** Gives the task's lease (KEYS[1]) up if ARGV[1] (this replica) holds it: one step, as taking it. */
const LET_LEASE_GO = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/**
 * Runs `work` every `intervalMs`, never overlapping itself, and on one dialer
 * replica at a time (a short Redis lease): replicas take over from each other
 * when one stops. A failed round is logged and the next one runs as usual.
 *
 * `work` gets a signal that is aborted when the task stops, when its
 * round finds the lease gone (Redis away past it, and another replica's
 * round begun), or when the round has run for MAX_ROUND_MS: a round of
 * many items (the reaper's 200 runs, each a carrier look-up) checks it
 * between them, so a stopping dialer waits for the item in hand, not for
 * the rest of the round, which the next round on another replica does,
 * and two replicas' rounds do not go on side by side. A task stopped after
 * its round returned gives its lease up, so another replica takes over at
 * its next round.
 *
 * A replica whose rounds fail FAILED_ROUNDS_BEFORE_HANDOVER times in a row
 * gives the lease up and leaves it for SIT_OUT_LEASES lease lengths: one
 * that reaches Redis but not Postgres (a partition, a broken pooler) would
 * otherwise take the lease again each round, and no healthy replica would
 * ever dispatch or reap. Alone, it takes the task back after the wait.
 */
export class PeriodicTask {
  private readonly logger: Logger;
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopping = new AbortController();
  private failedInARow = 0;
  /** `performance.now()` until which this replica leaves the task to others, after failing its rounds. */
  private sittingOutUntil = 0;
  /** Defined on first use: a task only constructed (a test running its rounds by hand) sends Redis nothing. */
  private holdLeaseScript: RedisScript | null = null;
  private letLeaseGoScript: RedisScript | null = null;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly client: RedisClient,
    private readonly work: (stopping: AbortSignal) => Promise<void>,
    private readonly stopWaitMs = STOP_WAIT_MS,
    private readonly maxRoundMs = MAX_ROUND_MS,
  ) {
    this.logger = new Logger(name);
  }

  start(): void {
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.schedule(0);
  }

  /**
   * Stops scheduling rounds, tells the round in flight to stop, and waits
   * for it to return, for `stopWaitMs` at most (STOP_WAIT_REDIS_AWAY_MS when
   * Redis is away). A round can be stuck on a command that waits for Redis
   * to come back (the lease's, queued while Redis is away): only closing the
   * Redis connection fails it, which the process does after every task has
   * stopped, so waiting for it here kept a stopping dialer alive until Redis
   * returned. The round is written to be cut off anywhere, as by a crash:
   * the next round, on this replica or another, takes up what it left.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearTimeout(this.timer);
    const running = this.running;
    if (running) {
      const waitMs = this.client.redis.status === 'ready' ? this.stopWaitMs : Math.min(this.stopWaitMs, STOP_WAIT_REDIS_AWAY_MS);
      // A round never rejects (`schedule` catches its failure): only the wait running out does.
      const returned = await withTimeout(running, waitMs, `${this.name}'s round`).then(
        () => true,
        () => false,
      );
      if (!returned) {
        // Still the lease's: another replica's round must not start beside the one going on here.
        this.logger.warn(`${this.name}: the round in flight did not return after the stop; left to fail as the process closes`);
        return;
      }
    }
    await this.letLeaseGo();
  }

  /** Runs one round now (tests and start-up use it), under the same lease. */
  async runOnce(): Promise<void> {
    if (!(await this.holdLease())) return;
    // A round can outlast the lease (a carrier slow to answer the reaper's look-ups): it is renewed while the round
    // runs, so no other replica starts a round beside this one, for `maxRoundMs` at most: a round that hangs must not
    // keep the task from every other replica. It is then told to stop, as at a lost lease, since another replica may
    // take the lapsed lease and start a round of its own; what it leaves is the next round's. Monotonic: a wall clock
    // stepped back does not extend it.
    const renewUntil = performance.now() + this.maxRoundMs;
    // The round's own signal, aborted by the task's stop, by the lease lost or by the round's age. A listener on the
    // task's signal, removed when the round ends (`AbortSignal.any` on Node 20 leaves an entry on it for every round,
    // for good).
    const round = new AbortController();
    const stop = () => round.abort();
    if (this.stopping.signal.aborted) round.abort();
    else this.stopping.signal.addEventListener('abort', stop, { once: true });
    const renewal = setInterval(() => {
      if (performance.now() > renewUntil) {
        clearInterval(renewal);
        this.logger.warn(`${this.name}: a round has run for ${this.maxRoundMs / 1000} s; it stops, and its lease is no longer renewed`);
        round.abort();
        return;
      }
      this.holdLease().then(
        (held) => {
          if (held) return;
          // Another replica holds it, and may be running a round: this one stops where it is.
          this.logger.warn(`${this.name}: the lease was lost during a round; the round stops`);
          round.abort();
          clearInterval(renewal);
        },
        (error: unknown) => this.logger.warn({ err: error }, `${this.name}: could not renew the lease`),
      );
    }, this.intervalMs);
    renewal.unref();
    try {
      await this.work(round.signal);
    } finally {
      clearInterval(renewal);
      this.stopping.signal.removeEventListener('abort', stop);
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => {
      if (performance.now() < this.sittingOutUntil) {
        this.schedule(this.intervalMs);
        return;
      }
      this.running = this.runOnce()
        .then(
          () => {
            this.failedInARow = 0;
          },
          (error: unknown) => this.roundFailed(error),
        )
        .finally(() => {
          this.running = null;
          this.schedule(this.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  private async roundFailed(error: unknown): Promise<void> {
    this.failedInARow += 1;
    this.logger.warn({ err: error, failed_in_a_row: this.failedInARow }, `${this.name} round failed`);
    if (this.failedInARow < FAILED_ROUNDS_BEFORE_HANDOVER) return;
    this.failedInARow = 0;
    this.sittingOutUntil = performance.now() + this.leaseMs() * SIT_OUT_LEASES;
    this.logger.warn(
      `${this.name}: ${FAILED_ROUNDS_BEFORE_HANDOVER} rounds failed in a row; the task is left to another replica for ${(this.leaseMs() * SIT_OUT_LEASES) / 1000} s`,
    );
    await this.letLeaseGo();
  }

  /**
   * Gives the lease up, so another replica takes the task over at its next
   * round rather than once the lease has run out (three intervals). Best
   * effort, and not waited for while Redis is away: a lease not given up
   * runs out.
   */
  private async letLeaseGo(): Promise<void> {
    if (!this.holdLeaseScript || this.client.redis.status !== 'ready') return;
    this.letLeaseGoScript ??= this.client.script('vaLetTaskLeaseGo', LET_LEASE_GO, 1);
    await withTimeout(this.letLeaseGoScript([this.client.keyFor('lease', this.name)], [this.owner]), STOP_WAIT_REDIS_AWAY_MS, `${this.name}'s lease`).catch(
      (error: unknown) => this.logger.warn({ err: error }, `${this.name}: could not give the lease up; it runs out by itself`),
    );
  }

  private leaseMs(): number {
    return Math.max(this.intervalMs * 3, 1000);
  }

  private async holdLease(): Promise<boolean> {
    const ttl = this.leaseMs();
    this.holdLeaseScript ??= this.client.script('vaHoldTaskLease', HOLD_LEASE, 1);
    return (await this.holdLeaseScript([this.client.keyFor('lease', this.name)], [this.owner, String(ttl)])) === 1;
  }
}
