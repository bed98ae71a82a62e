'use strict';
// Trigger-to-dial latency at a steady offered rate, the dialer running: for
// each trigger answered, (when the sandbox carrier was asked to dial its run)
// − (when the client received the answer). Both clocks are this machine's:
// Date.now() here, Postgres' now() in the sandbox ledger.

const { cpus } = require('node:os');
const { fixedRate, summarizeFixedRate } = require('./load');
const { busyPercent, cpuSeconds, machineCpu } = require('./processes');
const { median, percentile } = require('./stats');

/** Triggers due in the first this many ms are warm-up and left out of the figures. */
const WARMUP_MS = 2000;

async function triggerToDial(stack, trigger, { rate, seconds, rounds, connections, log }) {
  const results = [];
  for (let round = 0; round < rounds; round++) {
    await stack.waitDrained();
    const workFrom = await stack.workCounts();
    const cpuFrom = await cpuReading(stack);
    const load = await fixedRate({ ...trigger, rate, seconds, connections });
    const answered = summarizeFixedRate(load);
    const measured = load.answers.filter((answer) => answer.runId !== null && answer.dueAt >= load.start + WARMUP_MS);
    const runIds = measured.map((answer) => answer.runId);
    await stack.waitForCount(`SELECT count(DISTINCT run_id)::int AS n FROM sandbox_calls WHERE run_id = ANY($1::bigint[])`, [runIds], runIds.length);
    // Every call of the round finished, and Postgres' counts published (within a second of its backends idling).
    const drained = await stack.pollDrained(30000);
    const cpu = await cpuSince(stack, cpuFrom);
    if (!drained) log(`trigger→dial round ${round + 1}: runs still unfinished, so its CPU per trigger leaves out their remaining work`);
    await sleep(1500);
    const workTo = await stack.workCounts();
    const triggers = load.answers.filter((answer) => answer.runId !== null).length;
    const msPerTrigger = (seconds) => (triggers ? (seconds * 1000) / triggers : NaN);
    const timeline = await runTimeline(stack, runIds);
    const dialedAt = new Map([...timeline].map(([runId, run]) => [runId, run.dialedAt]));
    const lags = measured.filter((answer) => dialedAt.has(answer.runId)).map((answer) => dialedAt.get(answer.runId) - answer.answeredAt);
    const ledger = await ledgerCounts(stack, runIds);
    const result = {
      ...answered,
      measured: measured.length,
      dialed: lags.length,
      duplicates: ledger.dials - ledger.runs,
      dialP50: percentile(lags, 50),
      dialP99: percentile(lags, 99),
      dialMax: lags.length ? Math.max(...lags) : NaN,
      stages: stagesOf(timeline, await stack.placeCallJobTimes(runIds)),
      statementsPerTrigger: triggers ? (workTo.transactions - workFrom.transactions) / triggers : NaN,
      scriptsPerTrigger: triggers ? (workTo.scripts - workFrom.scripts) / triggers : NaN,
      cpuMs: withTogether(Object.fromEntries(Object.entries(cpu.seconds).map(([name, value]) => [name, msPerTrigger(value)]))),
      machinePercent: cpu.machinePercent,
    };
    log(
      `trigger→dial round ${round + 1}: offered ${rate}/s, answered ${Math.round(result.answeredPerSecond)}/s ` +
        `(shed ${result.shed}, failed ${result.failed}), dial lag p50 ${Math.round(result.dialP50)} ms, ` +
        `p99 ${Math.round(result.dialP99)} ms, ${result.dialed}/${result.measured} dialed, ${result.duplicates} duplicate dials ` +
        `(${ledger.dials} ledger rows for ${ledger.runs} runs); p50 by stage: ` +
        STAGES.map(({ name }) => `${name} ${Math.round(result.stages[name].p50)} ms`).join(', ') +
        `; per trigger, its call included (API and dialer): ${result.statementsPerTrigger.toFixed(1)} Postgres statements, ` +
        `${result.scriptsPerTrigger.toFixed(1)} Redis scripts, CPU ms ` +
        CPU_PARTS.map((part) => `${part} ${result.cpuMs[part].toFixed(2)}`).join(', ') +
        `; the machine ${Math.round(result.machinePercent)} % busy (of ${cpus().length * 100})`,
    );
    results.push(result);
  }
  const mid = (key) => median(results.map((r) => r[key]).filter(Number.isFinite));
  const sum = (key) => results.reduce((total, r) => total + r[key], 0);
  return {
    rate,
    seconds,
    answeredPerSecond: mid('answeredPerSecond'),
    answerP50: mid('p50'),
    answerP99: mid('p99'),
    dialP50: mid('dialP50'),
    dialP99: mid('dialP99'),
    dialMax: Math.max(...results.map((r) => r.dialMax).filter(Number.isFinite)),
    measured: sum('measured'),
    dialed: sum('dialed'),
    duplicates: sum('duplicates'),
    shed: sum('shed'),
    failed: sum('failed'),
    // Each column the median of its own rounds; "together" too (the median of the rounds' sums, not the sum of the medians).
    cpuMs: Object.fromEntries([...CPU_PARTS, 'together'].map((part) => [part, median(results.map((r) => r.cpuMs[part]).filter(Number.isFinite))])),
    machinePercent: mid('machinePercent'),
    stages: Object.fromEntries(
      STAGES.map(({ name }) => [name, { p50: median(results.map((r) => r.stages[name].p50)), p99: median(results.map((r) => r.stages[name].p99)) }]),
    ),
  };
}

/**
 * Where a run's trigger-to-dial time goes, from the run's insert to the
 * carrier's ledger entry. The first and last instants are Postgres' now(), the
 * others Node's Date.now() in the API and dialer: one machine, one clock.
 */
const STAGES = [
  { name: 'stored→queued', from: 'storedAt', to: 'addedAt' },
  { name: 'queued→taken', from: 'addedAt', to: 'takenAt' },
  { name: 'taken→claiming', from: 'takenAt', to: 'claimingAt' },
  { name: 'claiming→dialed', from: 'claimingAt', to: 'dialedAt' },
];

/**
 * What a trigger and its call cost each process at this rate, from the load's
 * start until every run of the round finished (BullMQ's bookkeeping of the
 * last jobs, after their runs' commit, may fall just outside):
 * set against the throughput scenarios' CPU per trigger and per call, it shows
 * how much dearer work is when it comes a request at a time rather than in a
 * stream (the ceiling scenario's table by arrival rate shows the same for a
 * bare route).
 */
const CPU_PARTS = ['API', 'dialer', 'Postgres', 'Redis'];

/**
 * The figures with `together`, their sum: NaN when the API's, the dialer's or
 * Postgres' figure is missing; Redis' left out (not counted as 0 in a figure
 * that claims to hold it: the table shows its dash) when Redis runs on another machine.
 */
function withTogether(figures) {
  const required = CPU_PARTS.filter((part) => part !== 'Redis');
  const together = required.every((part) => Number.isFinite(figures[part]))
    ? CPU_PARTS.reduce((sum, part) => sum + (Number.isFinite(figures[part]) ? figures[part] : 0), 0)
    : NaN;
  return { ...figures, together };
}

async function cpuReading(stack) {
  const redisPid = await stack.redisPid();
  return {
    redisPid,
    api: cpuSeconds(stack.api.pid),
    dialers: new Map([...stack.dialers].map((child) => [child, cpuSeconds(child.pid)])),
    postgres: await stack.postgresCpu(),
    redis: cpuSeconds(redisPid, 'redis-server'),
    machine: machineCpu(),
  };
}

async function cpuSince(stack, from) {
  let dialer = 0;
  for (const [child, seconds] of from.dialers) dialer += cpuSeconds(child.pid) - seconds;
  return {
    seconds: {
      API: cpuSeconds(stack.api.pid) - from.api,
      dialer,
      Postgres: await stack.postgresCpuSince(from.postgres),
      // NaN when Redis runs elsewhere (its pid is not a redis-server of this machine).
      Redis: cpuSeconds(from.redisPid, 'redis-server') - from.redis,
    },
    machinePercent: busyPercent(from.machine, machineCpu()),
  };
}

/**
 * What the stack costs each process with no triggers at all, in CPU ms per
 * second over `seconds` once every call is done (timers and pollers): the
 * floor the figures per trigger stand on. /proc counts CPU in 10 ms ticks, so
 * over 30 s a process's figure is good to about 0.3 ms a second; 30 s also
 * spans BullMQ's stalled-job check (every 30 s by default) once. Most of the
 * API's and the dialer's figures here are V8's memory reducer, which collects
 * the heap in bursts of about 100 ms some seconds after a process goes quiet
 * (BENCH_NODE_FLAGS=--no-memory-reducer brings them to about 0 and 3 ms a
 * second): a process under load does not pay it.
 */
async function idleCpu(stack, seconds) {
  await stack.waitDrained();
  const from = await cpuReading(stack);
  await sleep(seconds * 1000);
  const cpu = await cpuSince(stack, from);
  return {
    seconds,
    msPerSecond: withTogether(Object.fromEntries(Object.entries(cpu.seconds).map(([name, value]) => [name, (value * 1000) / seconds]))),
    machinePercent: cpu.machinePercent,
  };
}

/** Per run: stored (insert), claiming (the dialer asked to move it to `dialing`), dialed (carrier ledger). */
async function runTimeline(stack, runIds) {
  const rows = await stack.query(
    `SELECT r.id, extract(epoch FROM r.created_at) * 1000 AS stored_at,
            (SELECT extract(epoch FROM (e->>'at')::timestamptz) * 1000 FROM jsonb_array_elements(r.logs->'events') e
              WHERE e->>'event' = 'dialer.dialing' LIMIT 1) AS claiming_at,
            (SELECT extract(epoch FROM min(s.created_at)) * 1000 FROM sandbox_calls s WHERE s.run_id = r.id) AS dialed_at
       FROM workflow_runs r WHERE r.id = ANY($1::bigint[])`,
    [runIds],
  );
  return new Map(
    rows
      .filter((row) => row.dialed_at !== null)
      .map((row) => [Number(row.id), { storedAt: Number(row.stored_at), claimingAt: Number(row.claiming_at), dialedAt: Number(row.dialed_at) }]),
  );
}

/**
 * The carrier's ledger rows for the runs (`dials`), and how many runs they are: more rows than runs
 * are duplicate dials, which the lags (each run's first dial) would not show.
 */
async function ledgerCounts(stack, runIds) {
  const [counts] = await stack.query(
    `SELECT count(*)::int AS dials, count(DISTINCT run_id)::int AS runs FROM sandbox_calls WHERE run_id = ANY($1::bigint[])`,
    [runIds],
  );
  return counts;
}

function stagesOf(timeline, jobTimes) {
  const spans = Object.fromEntries(STAGES.map(({ name }) => [name, []]));
  for (const [runId, run] of timeline) {
    const times = { ...run, ...jobTimes.get(runId) };
    for (const { name, from, to } of STAGES) {
      if (Number.isFinite(times[from]) && Number.isFinite(times[to])) spans[name].push(times[to] - times[from]);
    }
  }
  return Object.fromEntries(STAGES.map(({ name }) => [name, { p50: percentile(spans[name], 50), p99: percentile(spans[name], 99) }]));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

module.exports = { triggerToDial, idleCpu, withTogether, STAGES, CPU_PARTS };
