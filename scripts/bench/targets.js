'use strict';
// The throughput targets the product holds itself to on a 2-core machine with Postgres and Redis on it (README,
// "Performance"), judged on what one bench run measured. A scenario left out (BENCH_ONLY) is "not measured".

const { cell } = require('./stats');

const TARGETS = {
  triggerRatio: 0.2,
  readRatio: 0.15,
  p99Ms: 30,
  oneDialer: 2000,
  twoDialersRatio: 1.6,
  latencyRate: 1000,
  latencyP50Ms: 15,
  latencyP99Ms: 60,
  apiRssMiB: 250,
  soakSeconds: 300,
  historyRuns: 1000000,
  historyTolerance: 0.1,
};

/**
 * The figures set side by side with and without the history, and which way
 * each is worse: +1 more, −1 less, 0 not judged (the Postgres figures, there
 * to explain a change). autocannon measures latency in whole milliseconds, so
 * a latency counts as worse only when it also moved by more than that step
 * (4 → 5 ms is one step, not 25 %).
 */
const HISTORY_FIGURES = [
  { key: 'rps', title: 'req/s', worse: -1 },
  { key: 'p50', title: 'p50 ms', worse: 1, resolution: 1 },
  { key: 'p99', title: 'p99 ms', worse: 1, resolution: 1 },
  { key: 'cpuMicros', title: 'server CPU µs per request', worse: 1 },
  { key: 'postgresCpuMicros', title: 'Postgres CPU µs per request', worse: 0 },
  { key: 'walBytes', title: 'WAL bytes per request', worse: 0 },
  { key: 'fullPageImages', title: 'WAL full-page images per request', worse: 0, digits: 2 },
  { key: 'blocksRead', title: 'blocks read from outside shared buffers per request', worse: 0, digits: 2 },
];

/** Whether any judged figure measured with the history is worse than without it by more than `tolerance`. */
function worseWithHistory(before, after, tolerance) {
  return HISTORY_FIGURES.some(
    ({ key, worse: sign, resolution = 0 }) => sign * (after[key] - before[key]) > Math.max(tolerance * before[key], resolution),
  );
}

const NOT_MEASURED = { measured: 'not measured', met: '–' };
const finite = (...values) => values.every(Number.isFinite);
/** yes or no; `–` when a figure it rests on is missing (a process died, nothing was answered). */
const verdict = (ok, ...figures) => (!finite(...figures) ? '–' : ok ? 'yes' : 'no');
/** A ratio cut (not rounded) to two decimals, so one just short of its line never reads as on it. */
const shortOf = (ratio) => cell(Math.floor(ratio * 100 + 1e-9) / 100, 2);
const count = (value) => value.toLocaleString('en');

/** An HTTP row against a ratio of the ceiling, a p99 and no errors. */
function httpTarget(row, ceilingRps, ratio) {
  if (!row) return NOT_MEASURED;
  if (!(ceilingRps > 0)) return { measured: `${cell(row.rps)} req/s, no ceiling measured`, met: '–' };
  const times = row.rps / ceilingRps;
  return {
    measured: `${shortOf(times)}× (${cell(row.rps)} req/s), p99 ${cell(row.p99)} ms, ${row.errors} errors`,
    met: verdict(times >= ratio && row.p99 < TARGETS.p99Ms && row.errors === 0, times, row.p99, row.errors),
  };
}

/**
 * Trigger → dial at the target's rate, judged only when the API took that rate (nothing shed or failed) and
 * every measured run was dialed exactly once: the percentiles leave out runs never dialed, so a run left
 * behind would otherwise make them look better, not worse.
 */
function latencyTarget(row) {
  if (!row) return NOT_MEASURED;
  const measured =
    `p50 ${cell(row.dialP50)} ms, p99 ${cell(row.dialP99)} ms (answered ${cell(row.answeredPerSecond)}/s, ` +
    `shed ${row.shed}, failed ${row.failed}, dialed ${row.dialed}/${row.measured}, ${row.duplicates} duplicate dials)`;
  const keptUp = row.answeredPerSecond >= 0.95 * row.rate && row.shed === 0 && row.failed === 0;
  const dialedOnce = row.dialed === row.measured && row.duplicates === 0;
  const fast = row.dialP50 < TARGETS.latencyP50Ms && row.dialP99 < TARGETS.latencyP99Ms;
  return { measured, met: verdict(keptUp && dialedOnce && fast, row.dialP50, row.dialP99, row.answeredPerSecond, row.duplicates) };
}

/**
 * The soak's verdict (scripts/bench/soak.js), judged only over the target's 5 minutes and on real samples.
 * Memory that stayed flat because the API did not take the load (requests shed or failed) is not met.
 */
function soakTarget(soak) {
  if (!soak) return NOT_MEASURED;
  const { first, last, slope } = soak.api;
  const { shed, failed } = soak.load;
  const measured =
    `${soak.verdict} over ${count(soak.seconds)} s: ${cell(first)} → ${cell(last)} MiB, last-half slope ${cell(slope, 2)} MiB/min, ` +
    `shed ${shed}, failed ${failed}`;
  if (soak.seconds < TARGETS.soakSeconds) return { measured: `${measured} (the target is for ${TARGETS.soakSeconds} s)`, met: '–' };
  const judged = soak.verdict === 'levelled off' || soak.verdict === 'KEPT GROWING';
  const ok = soak.verdict === 'levelled off' && shed === 0 && failed === 0;
  return { measured, met: judged ? verdict(ok, first, last, slope, shed, failed) : '–' };
}

/**
 * The history rows against the twin: no judged figure worse by more than the tolerance, each one measured,
 * and no errors on either side (a side that answered errors fast is no figure to compare).
 */
function historyTarget(rows) {
  if (rows.length === 0) return NOT_MEASURED;
  const judged = HISTORY_FIGURES.filter(({ worse }) => worse !== 0);
  const missing = rows.filter(
    ({ before, after }) => !judged.every(({ key }) => finite(before[key], after[key])) || !finite(before.errors, after.errors),
  );
  if (missing.length) return { measured: `figures missing: ${missing.map(({ name }) => name).join('; ')}`, met: '–' };
  const worse = rows.filter(({ before, after }) => worseWithHistory(before, after, TARGETS.historyTolerance));
  const erred = rows.filter(({ before, after }) => before.errors !== 0 || after.errors !== 0);
  const errors = erred.map(({ name, before, after }) => `${name} (${before.errors} → ${after.errors})`).join('; ');
  return {
    measured:
      (worse.length ? `worse: ${worse.map(({ name }) => name).join('; ')}` : `none worse, of ${rows.length} compared`) +
      (erred.length ? `; errors: ${errors}` : ''),
    met: verdict(worse.length === 0 && erred.length === 0),
  };
}

/**
 * One row per target: what it asks, what this run measured, and whether that
 * meets it. `m` holds the run's results: the ceiling's req/s, the HTTP rows by
 * role, the dialer rows (with `dialers`), the latency rows (with `rate`), the
 * API's peak RSS (NaN when no scenario loaded it), the soak, and the history
 * rows with the count of runs stored.
 */
function targetRows(m) {
  const rows = [];
  const add = (target, result) => rows.push({ target, ...result });
  const triggerAsk = `≥ ${cell(TARGETS.triggerRatio, 2)}× the ceiling, p99 < ${TARGETS.p99Ms} ms, no errors`;
  add(`POST trigger (the dialer working beside it) ${triggerAsk}`, httpTarget(m.trigger, m.ceilingRps, TARGETS.triggerRatio));
  add(`POST trigger, the dialer stopped, ${triggerAsk}`, httpTarget(m.triggerAlone, m.ceilingRps, TARGETS.triggerRatio));
  add(`POST trigger + Idempotency-Key ${triggerAsk}`, httpTarget(m.triggerIdempotent, m.ceilingRps, TARGETS.triggerRatio));
  add(
    `GET run ≥ ${cell(TARGETS.readRatio, 2)}× the ceiling, p99 < ${TARGETS.p99Ms} ms, no errors`,
    httpTarget(m.getRun, m.ceilingRps, TARGETS.readRatio),
  );

  const one = m.dialers.find((r) => r.dialers === 1);
  const two = m.dialers.find((r) => r.dialers === 2);
  // Dials/s counts ledger rows: a run dialed twice would count twice, so a duplicate dial misses the target.
  const dialsOf = (row) => `${cell(row.perSecond)} dials/s, ${cell(row.finishedPerSecond)} finished/s, ${row.duplicates} duplicate dials`;
  add(
    `one dialer ≥ ${count(TARGETS.oneDialer)} dials/s`,
    one
      ? { measured: dialsOf(one), met: verdict(one.perSecond >= TARGETS.oneDialer && one.duplicates === 0, one.perSecond, one.duplicates) }
      : NOT_MEASURED,
  );
  add(
    `two dialers ≥ ${TARGETS.twoDialersRatio}× one (the one of this run)`,
    one && two
      ? {
          measured: `${shortOf(two.perSecond / one.perSecond)}× (${dialsOf(two)})`,
          met: verdict(
            two.perSecond >= TARGETS.twoDialersRatio * one.perSecond && two.duplicates === 0,
            two.perSecond / one.perSecond,
            two.duplicates,
          ),
        }
      : NOT_MEASURED,
  );
  add(
    `trigger → dial at ${count(TARGETS.latencyRate)} triggers/s: p50 < ${TARGETS.latencyP50Ms} ms, p99 < ${TARGETS.latencyP99Ms} ms`,
    latencyTarget(m.latency.find((r) => r.rate === TARGETS.latencyRate)),
  );
  add(
    `API RSS < ${TARGETS.apiRssMiB} MiB under load`,
    Number.isFinite(m.apiPeakMiB) ? { measured: `peak ${cell(m.apiPeakMiB)} MiB`, met: verdict(m.apiPeakMiB < TARGETS.apiRssMiB) } : NOT_MEASURED,
  );
  add(`API RSS flat after a ${TARGETS.soakSeconds / 60}-minute soak`, soakTarget(m.soak));
  // Fewer runs stored than the target names can show a cost (no), not its absence.
  const fewer = m.history.length > 0 && m.historyRuns < TARGETS.historyRuns;
  const history = historyTarget(m.history);
  add(
    `${count(TARGETS.historyRuns)} runs stored${fewer ? ` (${count(m.historyRuns)} in this run)` : ''}: no figure more than ${TARGETS.historyTolerance * 100} % worse`,
    fewer && history.met === 'yes' ? { ...history, met: '–' } : history,
  );
  return rows;
}

function targetsTable(m) {
  return [
    '| target | measured in this run | met |',
    '|---|---|---|',
    ...targetRows(m).map(({ target, measured, met }) => `| ${target} | ${measured} | ${met} |`),
  ].join('\n');
}

module.exports = { HISTORY_FIGURES, TARGETS, targetRows, targetsTable, worseWithHistory };
