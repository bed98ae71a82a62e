'use strict';
// The system under test: its own database and queue prefix on the local
// Postgres and Redis, one API, and dialers that scenarios start and stop.

const { execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Redis } = require('ioredis');
const { Client } = require('pg');
const { API_NODE_FLAGS, DIALER_NODE_FLAGS } = require('../app-node-flags');
const { cpuSeconds, freePort, memoryMiB, sleep, startNode, stopAll, stopChild, waitUp } = require('./processes');

const API_MAIN = 'dist/apps/api/apps/api/src/main.js';
const DIALER_MAIN = 'dist/apps/dialer/apps/dialer/src/main.js';

class BenchStack {
  /** `name` (optional) tells a second stack's database, queue keys and processes from the first's. */
  constructor({ root, postgres, redisUrl, keepDatabase, artifactsParent, log, name = '' }) {
    this.root = root;
    this.name = name;
    this.artifactsParent = artifactsParent;
    this.postgres = postgres;
    this.redisUrl = redisUrl;
    this.keepDatabase = keepDatabase;
    this.log = log;
    this.id = `${Date.now().toString(36)}${process.pid.toString(36)}${name}`;
    this.databaseUrl = `${postgres}/va_bench_${this.id}`;
    /** The apps' QUEUE_PREFIX: a Redis Cluster hash tag, as in production. */
    this.queuePrefix = `{va-bench-${this.id}}`;
    this.dialers = new Set();
    /** Peak RSS (MiB) of every dialer process stopped so far, by the role it was started for. */
    this.dialerPeaks = [];
    this.closed = false;
  }

  build() {
    const nest = join(this.root, 'node_modules/@nestjs/cli/bin/nest.js');
    for (const app of ['api', 'dialer']) {
      try {
        execFileSync(process.execPath, [nest, 'build', app], { cwd: this.root, stdio: 'pipe' });
      } catch (error) {
        throw new Error(`nest build ${app} failed:\n${error.stdout}${error.stderr}`, { cause: error });
      }
    }
  }

  /** Creates and migrates the database, bootstraps an organization, starts the API. */
  async start() {
    this.artifacts = mkdtempSync(join(this.artifactsParent ?? tmpdir(), 'va-bench-'));
    const apiPort = await freePort();
    this.base = `http://127.0.0.1:${apiPort}`;
    this.env = {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: this.databaseUrl,
      REDIS_URL: this.redisUrl,
      QUEUE_PREFIX: this.queuePrefix,
      SECRETS_KEY: randomBytes(32).toString('hex'),
      ARTIFACTS_DIR: this.artifacts,
      LOG_LEVEL: 'warn',
      PORT: String(apiPort),
      PUBLIC_BASE_URL: this.base,
    };
    this.cli('migrate');
    this.key = JSON.parse(this.cli('bootstrap', '--org', 'Bench', '--json')).api_key;
    this.db = new Client({ connectionString: this.databaseUrl });
    await this.db.connect();
    const [{ autovacuum }] = await this.query('SHOW autovacuum');
    this.vacuumsItself = autovacuum !== 'on';
    if (this.vacuumsItself) {
      this.log('autovacuum is off on this Postgres server: the bench runs VACUUM ANALYZE on its database after each drain');
    }
    this.api = startNode(this.processName('api'), [join(this.root, API_MAIN)], this.env, this.root, API_NODE_FLAGS);
    await waitUp(`${this.base}/health/ready`);
  }

  processName(app) {
    return this.name ? `${this.name} ${app}` : app;
  }

  /** Runs `npm run cli -- args` on the bench database; its output stays out of the report unless it fails. */
  cli(...args) {
    try {
      return execFileSync(process.execPath, [join(this.root, 'scripts/cli.js'), ...args], { env: this.env, stdio: 'pipe' }).toString();
    } catch (error) {
      throw new Error(`cli ${args[0]} failed:\n${error.stdout}${error.stderr}`, { cause: error });
    }
  }

  /** Starts `count` dialer processes (each its own health port) and waits until they answer ready. */
  async startDialers(count, role) {
    const started = [];
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const name = this.processName(count > 1 ? `dialer ${i + 1}` : 'dialer');
      const child = startNode(
        name,
        [join(this.root, DIALER_MAIN)],
        { ...this.env, DIALER_HEALTH_PORT: String(port) },
        this.root,
        DIALER_NODE_FLAGS,
      );
      child.role = role;
      child.healthUrl = `http://127.0.0.1:${port}/health/ready`;
      this.dialers.add(child);
      started.push(child);
    }
    await Promise.all(started.map((child) => waitUp(child.healthUrl)));
    return started;
  }

  /** Stops dialers gracefully, keeping their peak RSS for the report. */
  async stopDialers(dialers = [...this.dialers]) {
    for (const child of dialers) this.dialerPeaks.push({ role: child.role, mib: memoryMiB(child.pid, 'VmHWM') });
    await Promise.all(dialers.map((child) => stopChild(child)));
    for (const child of dialers) this.dialers.delete(child);
  }

  apiPeakMiB() {
    return memoryMiB(this.api.pid, 'VmHWM');
  }

  apiRssMiB() {
    return memoryMiB(this.api.pid, 'VmRSS');
  }

  /** The Redis server's process id (from INFO), to read its CPU use when it runs on this machine. */
  redisPid() {
    return withRedis(this.redisUrl, async (redis) => Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]));
  }

  /**
   * Work counted so far: the transactions Postgres committed or rolled back in
   * the bench database (each statement outside a transaction is one, so with
   * no explicit transactions these are the statements), the commands the Redis
   * server ran for all of its clients (those its scripts run included), and
   * the scripts it was asked to run (EVALSHA/EVAL, BullMQ's and the
   * dialer's). Postgres publishes its counts within a second of a backend
   * going idle.
   */
  async workCounts() {
    const [{ transactions }] = await this.query(
      `SELECT (xact_commit + xact_rollback)::float8 AS transactions FROM pg_stat_database WHERE datname = current_database()`,
    );
    return withRedis(this.redisUrl, async (redis) => {
      const commands = Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1]);
      const stats = await redis.info('commandstats');
      const scripts = [...stats.matchAll(/^cmdstat_(?:evalsha|eval|evalsha_ro|eval_ro|fcall):calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
      return { transactions, commands, scripts };
    });
  }

  async query(sql, params) {
    return (await this.db.query(sql, params)).rows;
  }

  /**
   * Writes out every dirty page. The first change to a page after a checkpoint
   * puts a full copy of the page in the WAL, so two measurements compare only
   * when both start right after one. Logged and skipped if refused.
   */
  async checkpoint() {
    await this.query('CHECKPOINT').catch((error) => this.log(`CHECKPOINT refused (${error.message}); measuring without it`));
  }

  /** CPU seconds used so far by each Postgres backend serving the bench database (same machine), by pid. */
  async postgresCpu() {
    const rows = await this.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    return new Map(rows.map((row) => [row.pid, cpuSeconds(row.pid, 'postgres')]).filter(([, seconds]) => Number.isFinite(seconds)));
  }

  /** CPU seconds the bench database's backends used since a postgresCpu() reading (a backend new since then: all of its). */
  async postgresCpuSince(from) {
    return [...(await this.postgresCpu())].reduce((sum, [pid, seconds]) => sum + seconds - (from.get(pid) ?? 0), 0);
  }

  /**
   * Starts measuring what Postgres does for a stretch of requests; the function
   * it answers takes the number of requests and gives, per request: CPU µs of
   * the bench database's backends, WAL bytes and full-page images written (the
   * whole server's), and blocks the bench database read from outside its shared
   * buffers (from the OS cache or the disk; Postgres counts the new pages a
   * table grows by as read too).
   */
  async measurePostgres() {
    const counters = async () => {
      const [row] = await this.query(
        `SELECT w.wal_bytes::float8 AS wal_bytes, w.wal_fpi::float8 AS fpi, d.blks_read::float8 AS blocks_read
           FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = current_database()`,
      );
      return row;
    };
    const cpuFrom = await this.postgresCpu();
    const from = await counters();
    return async (requests) => {
      const to = await counters();
      const cpu = await this.postgresCpuSince(cpuFrom);
      const per = (value) => (requests > 0 ? value / requests : NaN);
      return {
        postgresCpuMicros: per(cpu * 1e6),
        walBytes: per(to.wal_bytes - from.wal_bytes),
        fullPageImages: per(to.fpi - from.fpi),
        blocksRead: per(to.blocks_read - from.blocks_read),
      };
    };
  }

  /**
   * Waits until no run is left unfinished (the dialers worked through what
   * earlier scenarios triggered), so one scenario's backlog does not load the
   * next. Gives up after `stallMs` without progress. Where autovacuum is off
   * (as on some shared development servers), it then vacuums the database, as
   * autovacuum would have: every run is updated several times, and without it
   * the dead row versions of one scenario would slow every later one.
   */
  async waitDrained(stallMs = 30000) {
    const drained = await this.pollDrained(stallMs);
    if (drained && this.vacuumsItself) await this.query('VACUUM ANALYZE');
    return drained;
  }

  async pollDrained(stallMs) {
    let last = Infinity;
    let lastChange = Date.now();
    for (;;) {
      const open = await this.openRuns();
      if (open === 0) return true;
      if (last === Infinity) this.log(`waiting for the dialers to finish ${open} open runs`);
      if (open < last) {
        last = open;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > stallMs) {
        const byStatus = await this.query(
          `SELECT status, count(*)::int AS runs FROM workflow_runs WHERE NOT is_completed GROUP BY status ORDER BY status`,
        );
        this.log(`${open} runs still unfinished after ${stallMs / 1000} s without progress: ${JSON.stringify(byStatus)}`);
        return false;
      }
      await sleep(500);
    }
  }

  /**
   * Runs not yet complete, counted on the partial index of open runs: with
   * statistics from before a burst of inserts the planner may choose to scan
   * the whole table instead, twice a second, and load Postgres in the bench's name.
   */
  async openRuns() {
    await this.query('SET enable_seqscan = off');
    try {
      const [{ open }] = await this.query(`SELECT count(*)::int AS open FROM workflow_runs WHERE NOT is_completed`);
      return open;
    } finally {
      await this.query('RESET enable_seqscan');
    }
  }

  /** Polls a count (`SELECT ... AS n`) until it reaches `target` or stops moving for `stallMs`; answers the last count. */
  async waitForCount(sql, params, target, stallMs = 20000) {
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const [{ n }] = await this.query(sql, params);
      if (n >= target) return n;
      if (n > last) {
        last = n;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > stallMs) {
        return n;
      }
      await sleep(250);
    }
  }

  /**
   * When each run's place-call job was added to the queue and when a dialer
   * took it (BullMQ's own `timestamp` and `processedOn`, Node clocks on this
   * machine), by run id; runs whose job is gone are left out.
   */
  placeCallJobTimes(runIds) {
    return withRedis(this.redisUrl, async (redis) => {
      const pipeline = redis.pipeline();
      // The `calls` queue; the job id is `run-<id>` (libs/queue/src/jobs.ts).
      for (const runId of runIds) pipeline.hmget(`${this.queuePrefix}:calls:run-${runId}`, 'timestamp', 'processedOn');
      const replies = await pipeline.exec();
      const times = new Map();
      replies.forEach(([error, [addedAt, takenAt]], index) => {
        if (!error && addedAt && takenAt) times.set(runIds[index], { addedAt: Number(addedAt), takenAt: Number(takenAt) });
      });
      return times;
    });
  }

  /** Stops every child, drops the database, the queue keys and the artifacts folder. Safe to call twice. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    await stopAll();
    await this.db?.end().catch(() => undefined);
    if (!this.artifacts) return;
    if (this.keepDatabase) {
      this.log(`kept ${this.databaseUrl}, queue prefix ${this.queuePrefix} and ${this.artifacts}`);
      return;
    }
    dropDatabase(this.postgres, this.databaseUrl, this.log);
    await deleteQueueKeys(this.redisUrl, `${this.queuePrefix}:*`).catch((error) => this.log(`could not delete queue keys: ${error.message}`));
    rmSync(this.artifacts, { recursive: true, force: true });
  }
}

function dropDatabase(postgres, url, log) {
  const name = new URL(url).pathname.slice(1);
  try {
    execFileSync('psql', [`${postgres}/postgres`, '-qc', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`], { stdio: 'ignore' });
  } catch {
    log(`could not drop ${name}`);
  }
}

async function deleteQueueKeys(redisUrl, pattern) {
  await withRedis(redisUrl, async (redis) => {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  });
}

/** Runs `use` on a connection of its own, closed afterwards. */
async function withRedis(redisUrl, use) {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

module.exports = { BenchStack };
