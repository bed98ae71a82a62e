import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createDataSource, ensureDatabase, runMigrations } from '@app/persistence';
import { APP_MAINS, buildAppsOnce } from '../support/build-apps-once';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { freePort } from '../support/free-port';
import { ManagedProcess } from './managed-process';
import { waitUntilUp } from './wait-until-up';

export interface ChaosOptions {
  triggers: number;
  /**
   * Triggers are spread evenly over this many seconds, while the chaos goes on.
   * At full speed they are fired as fast as they are answered, and the chaos
   * goes on for this many seconds, or until the last trigger is answered if that is later.
   */
  fireSeconds: number;
  /**
   * Full speed: the bench's carrier settings (no ring, no talk, 10,000 calls a
   * second and at once, so pacing never binds), the dialers' own default
   * concurrency, triggers fired back to back with 100 in flight, and a dialer
   * stopped every 2–4 s. Otherwise calls that ring and talk beside instant
   * ones, 20 dials a dialer at once, triggers spread over `fireSeconds` with
   * 16 in flight, and a dialer stopped every 0.6–1.4 s.
   */
  fullSpeed?: boolean;
  dialers: number;
  /** How long to wait for every accepted run to end after the last trigger. */
  settleTimeoutMs: number;
  /**
   * How long after the last dialer stop or Redis restart the dials are counted again, once the runs have
   * ended: a SIGKILLed dialer's job is taken up again only after its BullMQ lock expired and a stalled-job
   * check found it, so a duplicate dial can land after every run ended (see QUIET_SECONDS_NEEDED).
   */
  quietSeconds: number;
  redisRestarts: number;
  /** Leave the database in place afterwards, to look into a failed run (its URL is logged). */
  keepData?: boolean;
  log: (line: string) => void;
}

export interface ChaosResult {
  accepted: number;
  lost: number;
  duplicated: number;
  stuck: number;
  dialerKills: number;
  /** Dialers stopped with SIGTERM, and how many of those did not exit 0. */
  gracefulStops: number;
  uncleanShutdowns: number;
  redisRestarts: number;
  /** Accepted runs not yet complete at each Redis restart: the work the restart cut into. */
  openAtRedisRestarts: number[];
  triggerRetries: number;
  /** Triggers answered per second, from the first trigger to the last answer. */
  triggersPerSecond: number;
  statuses: Record<string, number>;
  seconds: number;
  /**
   * Over everything the test's workflows hold, not only the run ids the client was answered (a second run
   * created behind one Idempotency-Key would be dialed unseen): their runs, the carrier's ledger rows for
   * them, and how many distinct runs those rows dialed. Each should equal `accepted`.
   */
  runsCreated: number;
  ledgerRows: number;
  ledgerRuns: number;
  /** Ledger rows added during the quiet period after every run had ended. */
  lateDials: number;
}

/**
 * The dialer leaves BullMQ's worker defaults: a job's lock lasts 30 s (lockDuration) and stalled jobs are
 * looked for every 30 s (stalledInterval). A SIGKILLed dialer's job can so be taken up again up to 60 s
 * after the kill; a quiet period shorter than that could end before a late duplicate dial lands.
 */
export const QUIET_SECONDS_NEEDED = 60;

const SECRETS_KEY = randomBytes(32).toString('hex');

/** The sandbox's failures, the same in both profiles. */
const FAULTS = { throttle_rate: 0.15, error_rate: 0.1, timeout_rate: 0.05 };

/** What the default run and the full-speed one differ in (see `ChaosOptions.fullSpeed`). */
interface ChaosProfile {
  /** Two organizations' names and sandbox settings; triggers alternate between them. */
  organizations: ReadonlyArray<readonly [string, Record<string, unknown>]>;
  pacing: { callsPerSecond: number; maxConcurrentCalls: number };
  /** Per dialer; undefined leaves the dialers' own default. */
  dialerConcurrency: string | undefined;
  /** Triggers spread over `fireSeconds`, or fired back to back (the chaos then goes on for `fireSeconds` at least). */
  spreadTriggers: boolean;
  inFlight: number;
  /** A dialer is stopped every `stopEveryMs[0]` to `stopEveryMs[1]` ms. */
  stopEveryMs: readonly [number, number];
}

const DEFAULT_PROFILE: ChaosProfile = {
  // Calls that ring and talk, their status events one job each; and calls over at once without the built-in agent,
  // whose events come in one job and move the run once.
  organizations: [
    ['Chaos', { ring_ms: 100, talk_ms: 300, ...FAULTS }],
    ['Chaos, instant calls', { ring_ms: 0, talk_ms: 0, builtin_agent: false, ...FAULTS }],
  ],
  pacing: { callsPerSecond: 200, maxConcurrentCalls: 60 },
  dialerConcurrency: '20',
  spreadTriggers: true,
  inFlight: 16,
  stopEveryMs: [600, 1400],
};

const FULL_SPEED_PROFILE: ChaosProfile = {
  // Both over at once, one with the built-in agent and one without; pacing never binds.
  organizations: [
    ['Chaos, full speed', { ring_ms: 0, talk_ms: 0, ...FAULTS }],
    ['Chaos, full speed without agent', { ring_ms: 0, talk_ms: 0, builtin_agent: false, ...FAULTS }],
  ],
  pacing: { callsPerSecond: 10_000, maxConcurrentCalls: 10_000 },
  dialerConcurrency: undefined,
  spreadTriggers: false,
  inFlight: 100,
  // So the dialers spend most of their time dialing rather than starting up.
  stopEveryMs: [2000, 4000],
};

/**
 * Fires triggers at the real apps (separate processes) while it SIGKILLs and
 * restarts dialers, restarts Redis, and has the sandbox carrier throttle,
 * fail and lose answers to part of the dial requests. Then, once every run
 * ended and a quiet period passed, it counts per accepted run how many times
 * the carrier was asked to dial, and the runs and dials of the test's
 * workflows altogether.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const profile = options.fullSpeed ? FULL_SPEED_PROFILE : DEFAULT_PROFILE;
  await buildAppsOnce();
  const id = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const workDir = mkdtempSync(join(tmpdir(), `va-chaos-${id}-`));
  const databaseUrl = `${process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'}`.replace(/\/[^/]*$/, `/va_chaos_${id}`);
  const redisPort = await freePort();
  const apiPort = await freePort();
  const redis = new ManagedProcess('redis', 'redis-server', [
    '--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes',
    '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--dir', workDir,
  ], process.env);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '5',
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    QUEUE_PREFIX: `{va-chaos-${id}}`,
    SECRETS_KEY,
    ARTIFACTS_DIR: join(workDir, 'artifacts'),
    LOG_LEVEL: 'warn',
    PORT: String(apiPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    DISPATCH_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    RECONCILE_AFTER_SECONDS: '2',
    DIAL_TIMEOUT_SECONDS: '60',
    RING_TIMEOUT_SECONDS: '60',
    SHUTDOWN_GRACE_MS: '3000',
  };
  if (profile.dialerConcurrency === undefined) delete env.DIALER_CONCURRENCY;
  else env.DIALER_CONCURRENCY = profile.dialerConcurrency;
  const api = new ManagedProcess('api', process.execPath, [APP_MAINS.api], env);
  const dialers: ManagedProcess[] = [];
  let dataSource: DataSource | null = null;
  // The chaos loop stops and restarts dialers and Redis: it must be over before they are killed for good.
  let chaos: Promise<void> | null = null;
  let stopping = false;
  try {
    redis.start();
    await waitForRedis(redisPort);
    await ensureDatabase(databaseUrl);
    dataSource = createDataSource({ url: databaseUrl, poolSize: 3 });
    await dataSource.initialize();
    await runMigrations(dataSource);

    api.start();
    await waitUntilUp(`http://127.0.0.1:${apiPort}/health/live`);
    for (let i = 0; i < options.dialers; i++) {
      const dialer = new ManagedProcess(`dialer-${i}`, process.execPath, [APP_MAINS.dialer], {
        ...env,
        DIALER_HEALTH_PORT: String(await freePort()),
      });
      dialer.start();
      dialers.push(dialer);
    }

    const targets: TriggerTarget[] = [];
    const workflowIds: number[] = [];
    for (const [name, settings] of profile.organizations) {
      const org = await createOrganization(dataSource, name);
      await seedSandboxConfiguration(dataSource, org.organizationId, { settings, ...profile.pacing, maxCallDurationSeconds: 30 });
      const workflow = await seedWorkflow(dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
      targets.push({ uuid: workflow.triggerUuid, key: org.adminKey });
      workflowIds.push(workflow.workflowId);
    }

    let firing = true;
    const chaosUntil = Date.now() + options.fireSeconds * 1000;
    const openAtRedisRestarts: number[] = [];
    const store = dataSource;
    let dialerKills = 0;
    let uncleanShutdowns = 0;
    let gracefulStops = 0;
    let redisRestarts = 0;
    let lastChaosAt = Date.now();
    chaos = (async () => {
      let round = 0;
      const goesOn = () => !stopping && (firing || Date.now() < chaosUntil);
      while (goesOn()) {
        const [shortest, longest] = profile.stopEveryMs;
        await sleep(shortest + Math.random() * (longest - shortest));
        if (!goesOn()) break;
        round++;
        const victim = dialers[Math.floor(Math.random() * dialers.length)];
        // Deploys stop dialers that are up and working; one still loading its modules just dies.
        const graceful = round % 4 === 0 && Date.now() - victim.startedAt > 3000;
        const code = await victim.stop(graceful ? 'SIGTERM' : 'SIGKILL');
        lastChaosAt = Date.now();
        if (graceful) gracefulStops++;
        if (graceful && code !== 0) {
          uncleanShutdowns++;
          options.log(`chaos: ${victim.name} exited ${code} after SIGTERM; its last output:\n${victim.tail(15)}`);
        }
        dialerKills++;
        options.log(`chaos: stopped ${victim.name}`);
        await sleep(150);
        victim.start();
        if (redisRestarts < options.redisRestarts && round % 3 === 2) {
          const [row] = await store.query(`SELECT count(*)::int AS open FROM workflow_runs WHERE NOT is_completed`);
          openAtRedisRestarts.push(row.open);
          options.log(`chaos: restarting redis, ${row.open} runs open`);
          await redis.stop('SIGTERM');
          await sleep(300);
          redis.start();
          await waitForRedis(redisPort);
          lastChaosAt = Date.now();
          redisRestarts++;
        }
      }
    })();

    const fired = await fireTriggers(apiPort, targets, options.triggers, profile.spreadTriggers ? options.fireSeconds : 0, profile.inFlight, options.log);
    firing = false;
    await chaos;
    for (const dialer of dialers) if (!dialer.running) dialer.start();
    options.log(
      `fired: ${fired.accepted.length} accepted in ${fired.seconds.toFixed(1)} s, ${fired.retries} client retries; waiting for runs to end`,
    );

    const accepted = fired.accepted;
    const settling = Date.now();
    const deadline = settling + options.settleTimeoutMs;
    let open = accepted.length;
    while (Date.now() < deadline) {
      const [row] = await dataSource.query(`SELECT count(*)::int AS open FROM workflow_runs WHERE id = ANY($1) AND NOT is_completed`, [accepted]);
      open = row.open;
      if (open === 0) break;
      await sleep(500);
    }
    options.log(`${open} runs open ${((Date.now() - settling) / 1000).toFixed(1)} s after the chaos ended (${((Date.now() - started) / 1000).toFixed(1)} s in all)`);
    const atDrain = await ledgerOf(dataSource, workflowIds);
    const quietMs = Math.max(0, lastChaosAt + options.quietSeconds * 1000 - Date.now());
    options.log(`${atDrain.ledgerRows} dials; counting them again in ${(quietMs / 1000).toFixed(1)} s (${options.quietSeconds} s after the last stop or restart), for late duplicates`);
    await sleep(quietMs);
    const ledger = await ledgerOf(dataSource, workflowIds);

    const perRun: Array<{ id: number; status: string; is_completed: boolean; dials: number }> = await dataSource.query(
      `SELECT r.id, r.status, r.is_completed, count(c.call_id)::int AS dials
         FROM workflow_runs r LEFT JOIN sandbox_calls c ON c.run_id = r.id
        WHERE r.id = ANY($1) GROUP BY r.id`,
      [accepted],
    );
    const statuses: Record<string, number> = {};
    for (const run of perRun) statuses[run.status] = (statuses[run.status] ?? 0) + 1;
    return {
      accepted: accepted.length,
      lost: accepted.length - perRun.filter((run) => run.dials > 0).length,
      duplicated: perRun.filter((run) => run.dials > 1).length,
      stuck: perRun.filter((run) => !run.is_completed).length,
      dialerKills,
      gracefulStops,
      uncleanShutdowns,
      redisRestarts,
      openAtRedisRestarts,
      triggerRetries: fired.retries,
      triggersPerSecond: Math.round(accepted.length / fired.seconds),
      statuses,
      seconds: Math.round((Date.now() - started) / 1000),
      ...ledger,
      lateDials: ledger.ledgerRows - atDrain.ledgerRows,
    };
  } catch (error) {
    options.log(`api output:\n${api.tail()}`);
    for (const dialer of dialers) options.log(`${dialer.name} output:\n${dialer.tail()}`);
    throw error;
  } finally {
    // Also when firing the triggers failed: the loop would otherwise go on restarting what is killed below.
    stopping = true;
    await chaos?.catch(() => undefined);
    await Promise.all(dialers.map((dialer) => dialer.stop('SIGKILL')));
    await api.stop('SIGKILL');
    await redis.stop('SIGKILL');
    if (dataSource?.isInitialized) await dataSource.destroy();
    if (options.keepData) options.log(`kept the database: ${databaseUrl}`);
    else await dropDatabase(databaseUrl).catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The test's runs, the carrier's ledger rows for them, and how many distinct runs those rows dialed. */
async function ledgerOf(dataSource: DataSource, workflowIds: number[]) {
  const [row] = await dataSource.query(
    `SELECT (SELECT count(*)::int FROM workflow_runs WHERE workflow_id = ANY($1)) AS runs,
            count(c.call_id)::int AS dials, count(DISTINCT c.run_id)::int AS dialed_runs
       FROM sandbox_calls c JOIN workflow_runs r ON r.id = c.run_id
      WHERE r.workflow_id = ANY($1)`,
    [workflowIds],
  );
  return { runsCreated: row.runs as number, ledgerRows: row.dials as number, ledgerRuns: row.dialed_runs as number };
}

/** A trigger to fire, and the key of its organization. */
interface TriggerTarget {
  uuid: string;
  key: string;
}

/**
 * Fires `count` triggers spread over `fireSeconds` (0: back to back), up to
 * `inFlight` at once, at the targets in turn; each retries with its
 * Idempotency-Key until it gets an answer, as a bulk caller's script would.
 */
async function fireTriggers(
  port: number,
  targets: TriggerTarget[],
  count: number,
  fireSeconds: number,
  inFlight: number,
  log: (line: string) => void,
) {
  const accepted: number[] = [];
  let retries = 0;
  let next = 0;
  const start = Date.now();
  const spacingMs = (fireSeconds * 1000) / count;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      const { uuid, key } = targets[index % targets.length];
      const due = start + index * spacingMs;
      if (due > Date.now()) await sleep(due - Date.now());
      for (let attempt = 0; ; attempt++) {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/api/v1/public/agent/${uuid}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key, 'idempotency-key': `chaos-${index}` },
            body: JSON.stringify({ phone_number: '+14155550100', initial_context: { index } }),
            signal: AbortSignal.timeout(5000),
          });
          const body = (await response.json()) as { workflow_run_id?: number; code?: string };
          if (response.status === 200 && body.workflow_run_id) {
            accepted.push(body.workflow_run_id);
            break;
          }
          if (response.status < 500 && response.status !== 409) throw new Error(`trigger answered ${response.status} ${body.code}`);
        } catch (error) {
          if ((error as Error).message.startsWith('trigger answered')) throw error;
        }
        retries++;
        if (attempt > 50) throw new Error(`trigger ${index} never got an answer`);
        await sleep(200);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (Date.now() - start) / 1000;
  if (new Set(accepted).size !== accepted.length) log('warning: the same run id was answered for two different keys');
  return { accepted: [...new Set(accepted)], retries, seconds };
}

async function waitForRedis(port: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    await sleep(100);
  }
  throw new Error('redis did not come up');
}

async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
