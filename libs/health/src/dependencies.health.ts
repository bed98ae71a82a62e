import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { withTimeout } from '@app/common';
import { QueueName } from '@app/queue';

const PROBE_TIMEOUT_MS = 1000;

/** A dependency that answered but takes no writes: the apps cannot serve on it, though a read goes through. */
class TakesNoWrites extends Error {}

/**
 * Readiness probes of what both apps depend on: Postgres and Redis, each
 * asked whether it takes writes, which the apps need of it. A Postgres standby (a
 * failover that left the URL on the old primary) answers a `SELECT`, and a
 * Redis out of memory, read-only or refusing writes after a failed save runs
 * a read-only script, while neither can store a run or move a job. The
 * answer is unauthenticated, on the API's public port: a failing probe says
 * only that its dependency did not answer or takes no writes, and the
 * driver's error (hosts, ports, the database user) goes to the log.
 */
@Injectable()
export class DependenciesHealth {
  private readonly logger = new Logger(DependenciesHealth.name);
  /**
   * The question in flight to each dependency, which every probe meanwhile
   * waits on rather than asking again: a Postgres that hangs holds a pool
   * connection for each question until the statement gives up (20 s), and
   * probes every second from a few load balancers would take the pool the
   * requests need.
   */
  private readonly asking = new Map<string, Promise<unknown>>();

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    @InjectQueue(QueueName.Calls) private readonly queue: Queue,
  ) {}

  postgres(): Promise<HealthIndicatorResult> {
    return this.probe('postgres', async () => {
      // `on` on a hot standby, and where default_transaction_read_only is set: a run's insert answers 25006 there.
      const [row] = await this.dataSource.query<Array<{ transaction_read_only: string }>>('SHOW transaction_read_only');
      if (row?.transaction_read_only !== 'off') throw new TakesNoWrites(`transaction_read_only is ${row?.transaction_read_only}`);
    });
  }

  redis(): Promise<HealthIndicatorResult> {
    return this.probe('redis', async () => {
      // A worker's connection queues commands while Redis is away, to send them when it returns: a probe sent then
      // would answer nothing and leave one more command behind it for every probe of the outage. Nor is one sent by
      // a probe that waited out its time for the first connection (Redis away since the start): it was answered.
      const asked = Date.now();
      const client = await this.queue.backend.client;
      if (client.status !== 'ready') throw new Error(`the Redis connection is ${client.status}`);
      if (Date.now() - asked >= PROBE_TIMEOUT_MS) throw new Error('the first connection to Redis came after the probe was answered');
      // A write, which Redis refuses when out of memory under noeviction (OOM), as a replica (READONLY) or after a
      // failed save (MISCONF); a read, even a script's, would still be answered. One key per queue prefix, shared by
      // the dialers, living a minute.
      try {
        await client.set(`${this.queue.opts.prefix ?? 'bull'}:readiness-probe`, String(Date.now()), { PX: 60_000 });
      } catch (error) {
        // Redis' own answer (ioredis names every error reply so), not a lost connection.
        if ((error as Error | undefined)?.name === 'ReplyError') throw new TakesNoWrites((error as Error).message);
        throw error;
      }
    });
  }

  private async probe(name: string, ask: () => Promise<unknown>): Promise<HealthIndicatorResult> {
    const check = this.indicators.check(name);
    try {
      await withTimeout(this.askedOnce(name, ask), PROBE_TIMEOUT_MS, `${name} probe`);
      return check.up();
    } catch (error) {
      this.logger.warn({ dependency: name, err: error }, 'readiness probe failed');
      const problem = error instanceof TakesNoWrites ? 'takes no writes' : 'did not answer';
      return check.down({ message: `${name} ${problem} (the reason is in the log)` });
    }
  }

  private askedOnce(name: string, ask: () => Promise<unknown>): Promise<unknown> {
    let asked = this.asking.get(name);
    if (!asked) {
      asked = ask().finally(() => this.asking.delete(name));
      this.asking.set(name, asked);
    }
    return asked;
  }
}
