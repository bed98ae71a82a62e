#!/usr/bin/env node
/*
 * npm run bench: builds the apps, starts the API and a dialer against the
 * local Postgres and Redis (a database and queue prefix of its own, dropped at
 * the end), seeds a sandbox configuration (ring 0, talk 0, 10,000 calls/s: the
 * highest pacing the API accepts, so pacing never binds) and a published agent through the API, then
 * measures and prints markdown tables of medians over repeated rounds.
 *
 * Scenarios, in the order they run (names for BENCH_ONLY):
 *   ceiling             a bare Fastify route answering constant JSON, same harness (autocannon); then the same
 *                       route offered 250 requests/s and each BENCH_LATENCY_RATE by the latency scenario's
 *                       fixed-rate client, BENCH_SECONDS each, for its CPU per request when requests come one at a
 *                       time, set against its CPU at full speed;
 *   floor               the framework floor: a NestJS-on-Fastify route under the trigger's path that takes the
 *                       trigger's own requests (guard on X-API-Key, JSON body parsed) and answers constant JSON,
 *                       with the apps' Node flags (scripts/bench/floor-server.js): what the framework costs a
 *                       trigger before the gateway's own work, and so the most the trigger could reach;
 *   trigger             POST /api/v1/public/agent/{uuid}, ~1 KiB initial_context and a phone number of its own on
 *                       every request, as a campaign dials each number once (autocannon);
 *   trigger-alone       the same with the dialer stopped, so the gateway has the machine to itself as it
 *                       would beside dialers on other hosts; the dialer restarts afterwards and dials the runs;
 *   trigger-idempotent  the same with a fresh Idempotency-Key on every request;
 *   get-run             GET /api/v1/workflow/{id}/runs/{run_id} over the 2000 newest runs;
 *   list-runs           GET /api/v1/workflow/{id}/runs?limit=50 over the pages of those runs, as a dashboard pages
 *                       through a campaign's calls (50 run summaries an answer);
 *                       (the dialer runs alongside these (but trigger-alone) and works through the calls they create; each
 *                       scenario after the first trigger one starts once the dialer has finished the calls
 *                       the previous one left, so no figure depends on the backlog of the scenario before it)
 *   latency             trigger→dial: a fixed-rate client offers BENCH_LATENCY_RATE triggers/s for
 *                       BENCH_LATENCY_SECONDS per round with the dialer running; for each answered trigger,
 *                       (sandbox_calls.created_at, when the carrier was asked to dial) − (when the answer
 *                       arrived), p50/p99 after 2 s of warm-up. The client keeps BENCH_CONNECTIONS requests in
 *                       flight at most and sheds (and counts) any that would queue behind more than a second's
 *                       worth of them, so "answered/s" shows what the API kept up with. A second table splits
 *                       the time by stage: stored→queued (run insert → BullMQ job added), queued→taken (→ a
 *                       dialer took the job), taken→claiming (run read, pacing, slot, definition → the claim
 *                       asked for), claiming→dialed (claim, render, carrier ledger insert). A third gives the
 *                       CPU each process (API, dialer, Postgres, Redis) spent per trigger, its call included, from
 *                       the load's start until every run of the round finished, with their sum ("together", NaN when
 *                       the API's, the dialer's or Postgres' is missing), under what the same processes spend per
 *                       second over 30 s with no triggers at all (measured first). Postgres here is the backends
 *                       serving the bench database, not its WAL writer or checkpointer; the machine's % is over
 *                       the same span, every process on it included;
 *   soak                API (and dialer) RSS every BENCH_SOAK_SAMPLE_SECONDS while triggers arrive at half
 *                       the trigger req/s for BENCH_SOAK_SECONDS: first, last, max and the last half's slope,
 *                       Theil–Sen (the verdict: RSS is a sawtooth, scripts/bench/soak.js) and least squares
 *                       (a verdict needs 5 samples in the last half);
 *   dialer              dials/s with ONE and with TWO dialer processes: with no dialer running the gateway
 *                       takes a backlog of triggers, then the dialers start; the median per-second count of
 *                       sandbox_calls rows between 2 s after the first dial and 95 % of the backlog dialed
 *                       (each run also goes through its events and artifacts), with the CPU use of each dialer,
 *                       of the Postgres backends serving the bench database and of the whole machine, and per call
 *                       the Postgres statements (transactions in the bench database), Redis script calls and Redis
 *                       commands (the scripts' included) the round took (the latency log gives them per trigger),
 *                       and about the most dials/s the machine's cores allow at that CPU per call (cores ÷ the
 *                       dialers', Postgres' and Redis' CPU per call), which no process count or concurrency gets far past;
 *   history             inserts BENCH_HISTORY_RUNS finished runs (30 days of history, one INSERT ... SELECT
 *                       generate_series), VACUUM ANALYZE and CHECKPOINT, and sets trigger and get-run against a twin:
 *                       a second API, dialer and database started for it, alike but for the history. The two are
 *                       measured in rounds taken in turn (A B, B A, ...; both dialers drained before each), so the
 *                       machine's speed, which drifts by more than the 10 % judged over a few minutes, falls on both
 *                       alike. Reads come twice: the newest runs, as before the history, and runs spread over all of
 *                       it (old rows, cold pages); a table says whether any figure got worse by more than 10 %.
 * After the tables, one more judges each of the README's targets on this run alone (scripts/bench/targets.js).
 * Every HTTP row also gives the server's CPU time per answered request (utime + stime from /proc over
 * each round, the ceiling's server included), which other load on the machine moves far less than req/s,
 * and every API row the CPU time of the Postgres backends serving the bench database per answered
 * request (when Postgres runs on this machine; the dialer's queries included while it runs alongside);
 * the history table adds Postgres' WAL bytes, full-page images and blocks read from outside its shared
 * buffers per request, to explain a change. The log shows each round's figures, not only the medians.
 * Peak RSS (VmHWM) of the API and of every dialer process closes the report, after the highest of the API's RSS
 * sampled every 250 ms in each scenario (which scenario reached the peak; a sample can miss a spike of a few MiB). All of it takes about
 * 35 minutes on 2 cores; BENCH_ONLY and smaller knobs make a part quick to re-run. The apps run with
 * the Node flags of scripts/app-node-flags.js, as npm start runs them.
 *
 * Knobs (environment):
 *   BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_CONNECTIONS (100)  rounds, seconds per round and connections
 *                       of the autocannon scenarios; the dialer and latency scenarios repeat BENCH_ROUNDS too
 *   BENCH_ONLY          comma-separated scenario names to run (default: all)
 *   BENCH_DIALERS       dialer process counts of the dialer scenario (default 1,2)
 *   BENCH_DIAL_BACKLOG  runs per dialer round (default: sized from the rate seen so far for ~BENCH_SECONDS
 *                       of steady dialing)
 *   BENCH_LATENCY_RATE (1000; a comma-separated list gives a row per rate), BENCH_LATENCY_SECONDS (15)
 *   BENCH_SOAK_SECONDS (300), BENCH_SOAK_SAMPLE_SECONDS (2), BENCH_SOAK_RATE (half the measured trigger
 *                       req/s; measured with one round first when the trigger scenario is not run)
 *   BENCH_HISTORY_RUNS (1000000), BENCH_HISTORY_ROUNDS (5: rounds of each side of the history's comparison, whose
 *                       10 % lies within the spread of a few rounds on this machine)
 *   BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432), REDIS_URL (redis://127.0.0.1:6379)
 *   BENCH_NODE_FLAGS    node flags for the API and dialer processes (space-separated), e.g.
 *                       `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them
 *   BENCH_KEEP_DATA=1   keep the database, queue keys and artifacts afterwards, to look into them
 *   BENCH_AGENT=1       the sandbox's built-in agent takes every answered call (default: none): each call then
 *                       makes the API requests a voice-agent runtime makes (answer webhook, session, turns,
 *                       recording, closing report), and the dialer scenario's API CPU per call shows what they cost
 *   BENCH_ARTIFACTS_DIR the folder the run's artifacts folder is made in (default: the system's temporary
 *                       folder). Every call stores two artifacts, appended to pack files with one fdatasync a batch;
 *                       a tmpfs (/dev/shm) takes the disk out entirely. (When each artifact was a file, creating one
 *                       cost from 30 µs to 1 ms of kernel CPU on this machine's disk depending on the hour.)
 * The apps' own settings (DIALER_CONCURRENCY, DATABASE_POOL_SIZE, ...) pass through from the environment.
 * Other work on the machine skews every figure; the report ends with the load average before and after.
 */
'use strict';

const { cpus, loadavg } = require('node:os');
const { join } = require('node:path');
const { seed, recentRunIds, listCursors, triggerBodies } = require('./bench/api-client');
const { dialerThroughput } = require('./bench/dialer-throughput');
const { insertHistory, sampledRunIds } = require('./bench/history');
const { alternatingRounds, fixedRateCpu, sendAmount, throughputRounds } = require('./bench/load');
const { freePort, killAll, startNode, waitUp } = require('./bench/processes');
const {
  ceilingByRateTable,
  dialerTable,
  historyTable,
  httpTable,
  latencyCpuTable,
  latencyStagesTable,
  latencyTable,
  soakTable,
} = require('./bench/report');
const { GROWING_MIB_PER_MINUTE, soak } = require('./bench/soak');
const { BenchStack } = require('./bench/stack');
const { cell } = require('./bench/stats');
const { TARGETS, targetsTable } = require('./bench/targets');
const { CPU_PARTS, STAGES, idleCpu, triggerToDial } = require('./bench/trigger-to-dial');
const { API_NODE_FLAGS } = require('./app-node-flags');

const SCENARIOS = ['ceiling', 'floor', 'trigger', 'trigger-alone', 'trigger-idempotent', 'get-run', 'list-runs', 'latency', 'soak', 'dialer', 'history'];
const ROOT = join(__dirname, '..');
const env = process.env;
const knobs = {
  rounds: integer('BENCH_ROUNDS', 3),
  seconds: number('BENCH_SECONDS', 10),
  connections: integer('BENCH_CONNECTIONS', 100),
  only: readOnly(env.BENCH_ONLY),
  dialBacklog: integer('BENCH_DIAL_BACKLOG', null),
  latencyRates: (env.BENCH_LATENCY_RATE || '1000').split(',').map((rate) => positive('BENCH_LATENCY_RATE', rate)),
  latencySeconds: number('BENCH_LATENCY_SECONDS', 15),
  soakSeconds: number('BENCH_SOAK_SECONDS', 300),
  soakSampleSeconds: number('BENCH_SOAK_SAMPLE_SECONDS', 2),
  soakRate: number('BENCH_SOAK_RATE', null),
  historyRuns: integer('BENCH_HISTORY_RUNS', 1000000),
  historyRounds: integer('BENCH_HISTORY_ROUNDS', 5),
  dialerCounts: (env.BENCH_DIALERS || '1,2').split(',').map((count) => positive('BENCH_DIALERS', count)),
  agent: env.BENCH_AGENT === '1',
};
/** A rate at which requests come one at a time (4 ms apart), for the ceiling's CPU by arrival rate. */
const LONE_REQUEST_RATE = 250;
/** Seconds the latency scenario first measures the stack's CPU with no triggers, the floor its CPU per trigger stands on. */
const IDLE_SECONDS = 30;
const GET_RUN_IDS = 2000;
const RSS_SAMPLE_MS = 250;
const LIST_PAGE_SIZE = 50;
/** The scenarios that put the API under load: the API RSS target is judged only when one of them ran. */
const API_LOAD_SCENARIOS = ['trigger', 'trigger-alone', 'trigger-idempotent', 'get-run', 'list-runs', 'latency', 'soak', 'history'];
/** Other work on the machine skews every figure: the report shows how busy it was. */
const loadNow = () => loadavg().map((load) => load.toFixed(1)).join(' ');
const loadAtStart = loadNow();

const stackOptions = {
  root: ROOT,
  postgres: env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432',
  redisUrl: env.REDIS_URL || 'redis://127.0.0.1:6379',
  keepDatabase: env.BENCH_KEEP_DATA === '1',
  artifactsParent: env.BENCH_ARTIFACTS_DIR || undefined,
  log,
};
const stack = new BenchStack(stackOptions);
/** The history scenario's twin: a second stack without the history (null until it starts). */
let twin = null;
const closeStacks = () => Promise.all([stack.close(), twin?.close()]);
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping the apps and dropping the database`);
    void closeStacks().finally(() => process.exit(130));
  });
}

main()
  .catch((error) => {
    process.stderr.write(`bench failed: ${error.stack || error}\n`);
    process.exitCode = 1;
  })
  .finally(closeStacks);

async function main() {
  log(`scenarios: ${knobs.only.join(', ')}; load average ${loadAtStart}`);
  log('building the apps');
  stack.build();
  await stack.start();
  const { workflowId, trigger, getRun } = targetsOf(stack, await seed(stack.base, stack.key, { agent: knobs.agent }));
  await stack.startDialers(1, 'alongside the HTTP scenarios');
  const harness = { rounds: knobs.rounds, seconds: knobs.seconds, connections: knobs.connections, log };
  const apiHarness = { ...harness, ...measuredApi(stack) };
  // `roles` names the rows the targets judge (scripts/bench/targets.js).
  const report = { http: [], ceilingByRate: null, roles: {}, dialer: [], latency: [], latencyIdle: null, soak: null, historySize: null, history: [] };
  let ceilingRps = null;
  let triggerRps = null;

  // VmHWM gives the API's peak over the whole run; which scenario reached it shows in a sample of its RSS
  // every RSS_SAMPLE_MS, kept per scenario.
  let scenario = 'setup';
  const rssPeaks = new Map();
  const rssSampler = setInterval(() => {
    const mib = stack.apiRssMiB();
    if (Number.isFinite(mib)) rssPeaks.set(scenario, Math.max(rssPeaks.get(scenario) ?? 0, mib));
  }, RSS_SAMPLE_MS);
  const starts = (name) => {
    if (!wants(name)) return false;
    scenario = name;
    return true;
  };

  try {
    log(`measuring: ${knobs.rounds} rounds of ${knobs.seconds} s, ${knobs.connections} connections`);
    if (starts('ceiling')) {
      const ceiling = await startCeiling();
      const row = await throughputRounds('ceiling: bare Fastify constant JSON', () => ({ url: `${ceiling.url}/` }), {
        ...harness,
        pid: ceiling.child.pid,
      });
      const byRate = [];
      for (const rate of [...new Set([LONE_REQUEST_RATE, ...knobs.latencyRates])].sort((a, b) => a - b)) {
        const result = await fixedRateCpu({ url: `${ceiling.url}/`, method: 'GET', rate, seconds: knobs.seconds, connections: knobs.connections, pid: ceiling.child.pid });
        log(`ceiling at a fixed ${rate}/s: answered ${Math.round(result.answeredPerSecond)}/s, server CPU ${Math.round(result.cpuMicros)} µs/request`);
        byRate.push(result);
      }
      report.ceilingByRate = { rows: byRate, fullSpeed: row };
      ceiling.child.kill('SIGKILL');
      ceilingRps = row.rps;
      report.http.push(row);
    }
    if (starts('floor')) {
      const floor = await startFloor();
      const row = await throughputRounds(
        'framework floor: Nest on Fastify, the trigger\'s request, constant JSON',
        () => ({ ...trigger, url: `${floor.url}${new URL(trigger.url).pathname}` }),
        { ...harness, pid: floor.child.pid },
      );
      floor.child.kill('SIGKILL');
      report.http.push(row);
    }
    if (starts('trigger')) {
      const row = await throughputRounds('POST trigger', () => trigger, apiHarness);
      triggerRps = row.rps;
      report.http.push(row);
      report.roles.trigger = row;
    }
    if (starts('trigger-alone')) {
      await stack.waitDrained();
      await stack.stopDialers();
      report.roles.triggerAlone = await throughputRounds('POST trigger, dialer stopped', () => trigger, apiHarness);
      report.http.push(report.roles.triggerAlone);
      await stack.startDialers(1, 'alongside the HTTP scenarios');
    }
    if (starts('trigger-idempotent')) {
      await stack.waitDrained();
      let sequence = 0;
      const idempotent = () => ({
        ...trigger,
        setupRequest: (request) => {
          const next = trigger.setupRequest(request);
          return { ...next, headers: { ...next.headers, 'idempotency-key': `bench-${stack.id}-${sequence++}` } };
        },
      });
      report.roles.triggerIdempotent = await throughputRounds('POST trigger + Idempotency-Key', idempotent, apiHarness);
      report.http.push(report.roles.triggerIdempotent);
    }
    if (starts('get-run')) {
      await ensureRuns(stack, trigger, GET_RUN_IDS);
      await stack.waitDrained();
      const ids = await recentRunIds(stack.base, stack.key, workflowId, GET_RUN_IDS);
      report.roles.getRun = await throughputRounds(`GET run (${ids.length} distinct runs)`, getRun(ids), apiHarness);
      report.http.push(report.roles.getRun);
    }
    if (starts('list-runs')) {
      await ensureRuns(stack, trigger, GET_RUN_IDS);
      await stack.waitDrained();
      const cursors = await listCursors(stack.base, stack.key, workflowId, LIST_PAGE_SIZE, GET_RUN_IDS / LIST_PAGE_SIZE);
      const listPath = (cursor) => `/api/v1/workflow/${workflowId}/runs?limit=${LIST_PAGE_SIZE}${cursor ? `&cursor=${cursor}` : ''}`;
      let next = 0;
      const listRuns = () => ({
        url: `${stack.base}${listPath(null)}`,
        method: 'GET',
        headers: { 'x-api-key': stack.key },
        setupRequest: (request) => ({ ...request, path: listPath(cursors[next++ % cursors.length]) }),
      });
      report.http.push(await throughputRounds(`GET run list, ${LIST_PAGE_SIZE} a page (${cursors.length} pages)`, listRuns, apiHarness));
    }
    if (starts('latency')) {
      report.latencyIdle = await idleCpu(stack, IDLE_SECONDS);
      log(
        `idle, no triggers, ${IDLE_SECONDS} s: CPU ms per second ` +
          CPU_PARTS.map((part) => `${part} ${report.latencyIdle.msPerSecond[part].toFixed(1)}`).join(', ') +
          `; the machine ${Math.round(report.latencyIdle.machinePercent)} % busy`,
      );
      for (const rate of knobs.latencyRates) {
        report.latency.push(
          await triggerToDial(stack, trigger, { rate, seconds: knobs.latencySeconds, rounds: knobs.rounds, connections: knobs.connections, log }),
        );
      }
    }
    if (starts('soak')) {
      await stack.waitDrained();
      triggerRps ??= (await throughputRounds('POST trigger (for the soak rate)', () => trigger, { ...harness, rounds: 1 })).rps;
      const rate = knobs.soakRate ?? triggerRps / 2;
      log(`soak: ${Math.round(rate)} triggers/s for ${knobs.soakSeconds} s`);
      report.soak = await soak(stack, trigger, {
        rate: Math.max(1, Math.round(rate)),
        seconds: knobs.soakSeconds,
        sampleSeconds: knobs.soakSampleSeconds,
        connections: knobs.connections,
        log,
      });
    }
    if (starts('dialer')) {
      await stack.waitDrained();
      await stack.stopDialers();
      report.dialer = await dialerThroughput(stack, trigger, {
        dialerCounts: knobs.dialerCounts,
        rounds: knobs.rounds,
        seconds: knobs.seconds,
        backlog: knobs.dialBacklog,
        connections: knobs.connections,
        log,
      });
      await stack.startDialers(1, 'alongside the HTTP scenarios');
    }
    if (starts('history')) {
      // The machine's speed drifts by more than the 10 % judged over the minutes a measurement takes, so the
      // history is set against a twin: a second API, dialer and database, alike but for the history, measured in
      // rounds taken in turn with the stack holding it (A B, B A, ...) so that the drift falls on both alike.
      await ensureRuns(stack, trigger, GET_RUN_IDS);
      await stack.waitDrained();
      twin = new BenchStack({ ...stackOptions, name: 'twin' });
      await twin.start();
      const twinTargets = targetsOf(twin, await seed(twin.base, twin.key, { agent: knobs.agent }));
      await twin.startDialers(1, 'the twin without the history');
      await ensureRuns(twin, twinTargets.trigger, GET_RUN_IDS);
      report.historySize = await insertHistory(stack, workflowId, knobs.historyRuns, log);
      const stored = `${knobs.historyRuns.toLocaleString('en')} runs stored`;
      const historyHarness = { ...harness, rounds: knobs.historyRounds };
      const bothDrained = async () => {
        await stack.waitDrained();
        await twin.waitDrained();
      };
      const [twinTrigger, historyTrigger] = await alternatingRounds(
        [
          { name: 'POST trigger, twin without the history', options: () => twinTargets.trigger, ...measuredApi(twin), before: bothDrained },
          { name: `POST trigger, ${stored}`, options: () => trigger, ...measuredApi(stack), before: bothDrained },
        ],
        historyHarness,
      );
      await bothDrained();
      const twinNewest = await recentRunIds(twin.base, twin.key, twinTargets.workflowId, GET_RUN_IDS);
      const newest = await recentRunIds(stack.base, stack.key, workflowId, GET_RUN_IDS);
      const spread = await sampledRunIds(stack, workflowId, GET_RUN_IDS);
      const [twinGet, newestGet, spreadGet] = await alternatingRounds(
        [
          { name: `GET run, twin without the history (its ${twinNewest.length} newest)`, options: twinTargets.getRun(twinNewest), ...measuredApi(twin) },
          { name: `GET run, ${stored} (the ${newest.length} newest)`, options: getRun(newest), ...measuredApi(stack) },
          { name: `GET run, ${stored} (${spread.length} spread over them all)`, options: getRun(spread), ...measuredApi(stack) },
        ],
        historyHarness,
      );
      report.http.push(twinTrigger, historyTrigger, twinGet, newestGet, spreadGet);
      report.history = [
        { name: 'POST trigger', before: twinTrigger, after: historyTrigger },
        { name: 'GET run, the newest runs', before: twinGet, after: newestGet },
        { name: 'GET run, runs spread over the history', before: twinGet, after: spreadGet },
      ];
      await twin.stopDialers();
    }
  } finally {
    // On a failure too: the interval left running would keep the failed bench from exiting.
    clearInterval(rssSampler);
  }

  const apiPeak = stack.apiPeakMiB();
  await stack.stopDialers();
  print(report, ceilingRps, apiPeak, rssPeaks);
}

function print(report, ceilingRps, apiPeak, rssPeaks) {
  const out = [];
  if (report.http.length) out.push(httpTable(report.http, ceilingRps));
  if (report.ceilingByRate) out.push(ceilingByRateTable(report.ceilingByRate.rows, report.ceilingByRate.fullSpeed));
  if (report.historySize) {
    out.push(
      `History: workflow_runs ${report.historySize} with ${knobs.historyRuns} finished runs; against a twin without them, ` +
        `medians of ${knobs.historyRounds} rounds a side taken in turn.`,
    );
    out.push(historyTable(report.history, TARGETS.historyTolerance));
  }
  if (report.dialer.length) out.push(dialerTable(report.dialer, { agent: knobs.agent }));
  if (report.latency.length) {
    out.push(latencyTable(report.latency), latencyStagesTable(report.latency, STAGES), latencyCpuTable(report.latency, CPU_PARTS, report.latencyIdle));
  }
  if (report.soak) out.push(soakTable(report.soak, GROWING_MIB_PER_MINUTE));
  out.push(
    knobs.agent
      ? 'Targets (README, "Performance"), judged on this run alone; with BENCH_AGENT=1 every call also takes the ' +
          "built-in agent, which the targets' dialer, latency and soak scenarios do not:"
      : 'Targets (README, "Performance"), judged on this run alone:',
    targetsTable({
      ceilingRps,
      ...report.roles,
      dialers: report.dialer,
      latency: report.latency,
      apiPeakMiB: API_LOAD_SCENARIOS.some((name) => rssPeaks.has(name)) ? apiPeak : NaN,
      soak: report.soak,
      historyRuns: knobs.historyRuns,
      history: report.history,
    }),
  );
  const dialerPeaks = new Map();
  for (const { role, mib } of stack.dialerPeaks) dialerPeaks.set(role, Math.max(dialerPeaks.get(role) ?? 0, mib));
  const byScenario = [...rssPeaks].map(([name, mib]) => `${name} ${cell(mib)}`).join(', ');
  out.push(
    `API RSS by scenario, the highest of samples ${RSS_SAMPLE_MS} ms apart (MiB): ${byScenario}\n` +
      `peak RSS: api ${cell(apiPeak)} MiB; dialer ${[...dialerPeaks].map(([role, mib]) => `${cell(mib)} MiB (${role})`).join(', ')}\n` +
      `(medians of ${knobs.rounds} rounds × ${knobs.seconds} s, ${knobs.connections} connections; node ${process.version}; ` +
      `${cpus().length} cores; load average ${loadAtStart} at the start, ${loadNow()} at the end` +
      `${stack.vacuumsItself ? '; autovacuum off on this server: the bench ran VACUUM ANALYZE after each drain' : ''})`,
  );
  process.stdout.write(`\n${out.join('\n\n')}\n`);
}

/** Makes sure the stack's workflow has at least `count` runs to read (when get-run runs without the trigger scenarios). */
async function ensureRuns(onStack, trigger, count) {
  const [{ runs }] = await onStack.query(`SELECT count(*)::int AS runs FROM workflow_runs`);
  if (runs >= count) return;
  log(`triggering ${count - runs} runs to read`);
  await sendAmount(trigger, count - runs, knobs.connections);
}

/**
 * The requests of a stack's seeded agent: its trigger (~1 KiB initial_context, and a phone number of its own on
 * every request: autocannon and fixedRate call setupRequest before each), and GET run over the given run ids.
 */
function targetsOf(onStack, { uuid, workflowId }) {
  const nextBody = triggerBodies();
  const trigger = {
    url: `${onStack.base}/api/v1/public/agent/${uuid}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': onStack.key },
    body: nextBody(),
    setupRequest: (request) => ({ ...request, body: nextBody() }),
  };
  const getRun = (ids) => {
    let next = 0;
    return () => ({
      url: `${onStack.base}/api/v1/workflow/${workflowId}/runs/${ids[0]}`,
      method: 'GET',
      headers: { 'x-api-key': onStack.key },
      setupRequest: (request) => ({ ...request, path: `/api/v1/workflow/${workflowId}/runs/${ids[next++ % ids.length]}` }),
    });
  };
  return { workflowId, trigger, getRun };
}

/** What a round against a stack's API measures besides the load: the API's CPU and its database's work. */
function measuredApi(onStack) {
  return { pid: onStack.api.pid, measure: () => onStack.measurePostgres() };
}

async function startCeiling() {
  const port = await freePort();
  const source = `
    const fastify = require('fastify')();
    fastify.get('/', async () => ({ status: 'ok', service: 'ceiling' }));
    fastify.listen({ port: ${port}, host: '127.0.0.1' });
  `;
  const child = startNode('ceiling', ['-e', source], process.env, ROOT);
  const url = `http://127.0.0.1:${port}`;
  await waitUp(url);
  return { url, child };
}

/** The framework floor (scripts/bench/floor-server.js), with the apps' Node flags. */
async function startFloor() {
  const port = await freePort();
  const child = startNode('floor', [join(__dirname, 'bench', 'floor-server.js'), String(port)], process.env, ROOT, API_NODE_FLAGS);
  const url = `http://127.0.0.1:${port}`;
  await waitUp(`${url}/api/v1/public/agent/ready`);
  return { url, child };
}

function wants(scenario) {
  return knobs.only.includes(scenario);
}

function readOnly(value) {
  if (!value) return SCENARIOS;
  const names = value.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = names.filter((name) => !SCENARIOS.includes(name));
  if (unknown.length) {
    process.stderr.write(`BENCH_ONLY: unknown scenario(s) ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}\n`);
    process.exit(2);
  }
  return SCENARIOS.filter((name) => names.includes(name));
}

function number(name, fallback) {
  const raw = env[name];
  return raw === undefined || raw === '' ? fallback : positive(name, raw);
}

function integer(name, fallback) {
  const value = number(name, fallback);
  if (value !== null && !Number.isInteger(value)) {
    process.stderr.write(`${name} must be a whole number (got "${env[name]}")\n`);
    process.exit(2);
  }
  return value;
}

function positive(name, raw) {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    process.stderr.write(`${name} must be a positive number (got "${raw}")\n`);
    process.exit(2);
  }
  return value;
}

function log(line) {
  process.stderr.write(`bench: ${line}\n`);
}
