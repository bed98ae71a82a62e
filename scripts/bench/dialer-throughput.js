'use strict';
// Dials per second through the sandbox carrier. With no dialer running, the
// gateway takes a backlog of triggers (real runs, real BullMQ jobs); then
// one or two dialer processes start and work through it, each run through its
// whole life (dial, status events, artifacts). The rate is read from the
// sandbox carrier's ledger: `sandbox_calls.created_at` is Postgres' now() when
// the carrier stored the dial request.

const { sendAmount } = require('./load');
const { cell, median } = require('./stats');
const { busyPercent, cpuSeconds, machineCpu } = require('./processes');

/** Dials before this much time after the first one are warm-up (JIT, pools, the second process booting). */
const WARMUP_MS = 2000;
/** The steady part ends when this share of the backlog is dialed: the tail is stragglers. */
const STEADY_SHARE = 0.95;
const FIRST_ESTIMATE_PER_SECOND = 1000;
/** Postgres publishes a backend's statistics within a second of it going idle. */
const STATS_DELAY_MS = 1500;

/**
 * For each dialer count, `rounds` rounds; each answers the median of the
 * per-second dial counts in its steady part, and the row the median of those.
 * Without a fixed `backlog` each round's backlog is sized from the rate seen
 * so far to give about `seconds` of steady dialing.
 */
async function dialerThroughput(stack, trigger, { dialerCounts, rounds, seconds, backlog, connections, log }) {
  const rows = [];
  let perDialerEstimate = FIRST_ESTIMATE_PER_SECOND;
  for (const count of dialerCounts) {
    const results = [];
    for (let round = 0; round < rounds; round++) {
      const size = backlog ?? plannedBacklog(perDialerEstimate * count, seconds);
      const result = await oneRound(stack, trigger, count, size, connections, log);
      results.push(result);
      // A backlog dialed within the warm-up gives no steady rate: size the next one from the finishing rate.
      const seen = Number.isFinite(result.perSecond) ? result.perSecond : result.finishedPerSecond;
      if (Number.isFinite(seen)) perDialerEstimate = Math.max(perDialerEstimate, seen / count);
      log(
        `${count} dialer(s), round ${round + 1}: ${cell(result.perSecond)} dials/s steady ` +
          `(${cell(result.min)}–${cell(result.max)} over ${result.steadySeconds} s), backlog ${result.backlog}, ` +
          `dialed ${result.dialed} (${result.dialedRuns} runs, ${result.duplicates} duplicate dials), ` +
          `finished ${result.finished} at ${cell(result.finishedPerSecond)}/s, ` +
          `CPU ms per call: dialer ${cell(result.cpuMsPerCall, 2)}, Postgres ${cell(result.postgresMsPerCall, 2)}, Redis ${cell(result.redisMsPerCall, 2)}, ` +
          `API ${cell(result.apiMsPerCall, 2)}; ` +
          `per call: ${cell(result.statementsPerCall, 1)} Postgres statements, ${cell(result.scriptsPerCall, 1)} Redis scripts ` +
          `and ${cell(result.commandsPerCall, 1)} Redis commands (the scripts' included); ` +
          `CPU: ${cell(result.cpuPercent)} % per dialer, ${cell(result.postgresPercent)} % Postgres, ${cell(result.redisPercent)} % Redis, ` +
          `${cell(result.machinePercent)} % the whole machine`,
      );
    }
    rows.push({
      name: `dials/s, ${count} dialer${count > 1 ? 's' : ''}`,
      dialers: count,
      perSecond: median(results.map((r) => r.perSecond).filter(Number.isFinite)),
      min: Math.min(...results.map((r) => r.min)),
      max: Math.max(...results.map((r) => r.max)),
      steadySeconds: median(results.map((r) => r.steadySeconds)),
      backlog: median(results.map((r) => r.backlog)),
      finishedPerSecond: median(results.map((r) => r.finishedPerSecond)),
      cpuPercent: median(results.map((r) => r.cpuPercent)),
      postgresPercent: median(results.map((r) => r.postgresPercent)),
      redisPercent: median(results.map((r) => r.redisPercent)),
      cpuMsPerCall: median(results.map((r) => r.cpuMsPerCall)),
      postgresMsPerCall: median(results.map((r) => r.postgresMsPerCall)),
      redisMsPerCall: median(results.map((r) => r.redisMsPerCall)),
      apiMsPerCall: median(results.map((r) => r.apiMsPerCall)),
      statementsPerCall: median(results.map((r) => r.statementsPerCall)),
      commandsPerCall: median(results.map((r) => r.commandsPerCall)),
      scriptsPerCall: median(results.map((r) => r.scriptsPerCall)),
      machinePercent: median(results.map((r) => r.machinePercent)),
      unfinished: results.reduce((sum, r) => sum + (r.backlog - r.finished), 0),
      duplicates: results.reduce((sum, r) => sum + r.duplicates, 0),
    });
  }
  return rows;
}

function plannedBacklog(estimatePerSecond, seconds) {
  const wanted = (estimatePerSecond * (WARMUP_MS / 1000 + seconds + 1)) / STEADY_SHARE;
  return Math.min(100000, Math.max(500, Math.ceil(wanted / 100) * 100));
}

async function oneRound(stack, trigger, count, size, connections, log) {
  const [{ id: before }] = await stack.query(`SELECT COALESCE(max(id), 0)::float8 AS id FROM workflow_runs`);
  const { failed } = await sendAmount(trigger, size, connections);
  if (failed) log(`${failed} of ${size} backlog triggers failed`);
  const [{ queued }] = await stack.query(`SELECT count(*)::int AS queued FROM workflow_runs WHERE id > $1`, [before]);

  const dialers = await stack.startDialers(count, `throughput, ${count} dialer(s)`);
  const cpuFrom = dialers.map((child) => cpuSeconds(child.pid));
  // The API works on a call only when an agent takes it (BENCH_AGENT): its answer webhook and session requests.
  const apiFrom = cpuSeconds(stack.api.pid);
  const postgresFrom = await stack.postgresCpu();
  const redisPid = await stack.redisPid();
  const redisFrom = cpuSeconds(redisPid, 'redis-server');
  const machineFrom = machineCpu();
  const workFrom = await stack.workCounts();
  const busyFrom = Date.now();
  // Runs dialed, not ledger rows: a duplicate dial must not end the wait before every run was dialed.
  await stack.waitForCount(`SELECT count(DISTINCT run_id)::int AS n FROM sandbox_calls WHERE run_id > $1`, [before], queued);
  // How busy each dialer was while it dialed: near 100 % means CPU-bound, well below means it waited on something.
  const busySeconds = (Date.now() - busyFrom) / 1000;
  const cpuPercent = median(dialers.map((child, i) => ((cpuSeconds(child.pid) - cpuFrom[i]) / busySeconds) * 100));
  const machinePercent = busyPercent(machineFrom, machineCpu());
  const postgresPercent = ((await stack.postgresCpuSince(postgresFrom)) / busySeconds) * 100;
  // NaN when Redis runs elsewhere (its pid is not one of this machine's processes).
  const redisPercent = ((cpuSeconds(redisPid, 'redis-server') - redisFrom) / busySeconds) * 100;
  await stack.waitForCount(`SELECT count(*)::int AS n FROM workflow_runs WHERE id > $1 AND is_completed`, [before], queued);
  // The whole cost of a call (dial, events, artifacts) to the dialers, Postgres and Redis, from ready to the last run
  // finished: steadier than the rates, and where each millisecond of a call goes.
  const dialerSeconds = dialers.reduce((sum, child, i) => sum + cpuSeconds(child.pid) - cpuFrom[i], 0);
  const postgresSeconds = await stack.postgresCpuSince(postgresFrom);
  const redisSeconds = cpuSeconds(redisPid, 'redis-server') - redisFrom;
  const apiSeconds = cpuSeconds(stack.api.pid) - apiFrom;
  await stack.stopDialers(dialers);
  await sleep(STATS_DELAY_MS);
  const workTo = await stack.workCounts();

  const dials = (
    await stack.query(
      `SELECT extract(epoch FROM created_at) * 1000 AS at FROM sandbox_calls WHERE run_id > $1 ORDER BY created_at`,
      [before],
    )
  ).map((row) => Number(row.at));
  const [{ runs: dialedRuns }] = await stack.query(`SELECT count(DISTINCT run_id)::int AS runs FROM sandbox_calls WHERE run_id > $1`, [before]);
  const [{ finished, last_done: lastDone }] = await stack.query(
    `SELECT count(*)::int AS finished, extract(epoch FROM max(updated_at)) * 1000 AS last_done
       FROM workflow_runs WHERE id > $1 AND is_completed`,
    [before],
  );
  const steady = steadyPerSecond(dials);
  return {
    ...steady,
    cpuMsPerCall: finished ? (dialerSeconds * 1000) / finished : NaN,
    postgresMsPerCall: finished ? (postgresSeconds * 1000) / finished : NaN,
    redisMsPerCall: finished ? (redisSeconds * 1000) / finished : NaN,
    apiMsPerCall: finished ? (apiSeconds * 1000) / finished : NaN,
    statementsPerCall: finished ? (workTo.transactions - workFrom.transactions) / finished : NaN,
    commandsPerCall: finished ? (workTo.commands - workFrom.commands) / finished : NaN,
    scriptsPerCall: finished ? (workTo.scripts - workFrom.scripts) / finished : NaN,
    cpuPercent,
    postgresPercent,
    redisPercent,
    machinePercent,
    backlog: queued,
    // Ledger rows, and the runs they dialed: the rate counts rows, so a run dialed twice would count twice.
    dialed: dials.length,
    dialedRuns,
    duplicates: dials.length - dialedRuns,
    finished,
    finishedPerSecond: dials.length ? finished / Math.max(0.001, (Number(lastDone) - dials[0]) / 1000) : NaN,
  };
}

/** Per-second dial counts between the end of warm-up and the moment STEADY_SHARE of them were made. */
function steadyPerSecond(dials) {
  if (dials.length === 0) return { perSecond: NaN, min: NaN, max: NaN, steadySeconds: 0 };
  const from = dials[0] + WARMUP_MS;
  const until = dials[Math.max(0, Math.floor(dials.length * STEADY_SHARE) - 1)];
  const counts = [];
  for (let second = from; second + 1000 <= until; second += 1000) {
    counts.push(dials.filter((at) => at >= second && at < second + 1000).length);
  }
  if (counts.length === 0) return { perSecond: NaN, min: NaN, max: NaN, steadySeconds: 0 };
  return { perSecond: median(counts), min: Math.min(...counts), max: Math.max(...counts), steadySeconds: counts.length };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

module.exports = { dialerThroughput };
