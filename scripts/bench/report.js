'use strict';
// The markdown tables the bench prints.

const { cpus } = require('node:os');
const { cell } = require('./stats');
const { HISTORY_FIGURES, worseWithHistory } = require('./targets');

function httpTable(rows, ceilingRps) {
  const ratio = (rps) => (ceilingRps ? cell(rps / ceilingRps, 2) : '–');
  return [
    '| scenario | req/s | × ceiling | p50 ms | p99 ms | errors | server CPU µs per request | Postgres CPU µs per request |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${cell(r.rps)} | ${ratio(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} | ${cell(r.cpuMicros)} | ${cell(r.postgresCpuMicros)} |`,
    ),
  ].join('\n');
}

function dialerTable(rows, { agent = false } = {}) {
  return [
    `| dialer (sandbox, ring 0, talk 0${agent ? ', built-in agent' : ''}) | dials/s (median per-second, steady) | per-second min–max | steady s | backlog | runs finished/s | unfinished ` +
      `| CPU ms per call: dialer / Postgres / Redis / API | dials/s these ${cpus().length} cores allow at that CPU per call | per call: Postgres statements / Redis scripts / Redis commands (the scripts' included) | CPU % per dialer | CPU % Postgres | CPU % Redis | CPU % machine (${cpus().length * 100} = all cores busy) |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${cell(r.perSecond)} | ${cell(r.min)}–${cell(r.max)} | ${cell(r.steadySeconds)} | ${cell(r.backlog)} | ` +
        `${cell(r.finishedPerSecond)} | ${r.unfinished} | ${cell(r.cpuMsPerCall, 2)} / ${cell(r.postgresMsPerCall, 2)} / ${cell(r.redisMsPerCall, 2)} / ${cell(r.apiMsPerCall, 2)} | ${cell(coresAllow(r))} | ${cell(r.statementsPerCall, 1)} / ${cell(r.scriptsPerCall, 1)} / ${cell(r.commandsPerCall, 1)} | ${cell(r.cpuPercent)} | ${cell(r.postgresPercent)} | ${cell(r.redisPercent)} | ${cell(r.machinePercent)} |`,
    ),
  ].join('\n');
}

/**
 * About the most calls a second this machine's cores could place if they did
 * nothing but the dialers', Postgres', Redis' and the API's share of a call,
 * at the CPU a call cost them in this round: no number of processes or
 * concurrency setting gets far past it, only cheaper calls or more cores. The
 * rate and the CPU are measured over slightly different spans (the steady
 * part, the whole backlog), so a round may pass it by a few %. The API took
 * the backlog before the round: its share is what a call asks of it after
 * (an agent's requests, BENCH_AGENT), else next to nothing. Not counted:
 * Redis when it runs on another machine.
 */
function coresAllow(r) {
  const finiteOrZero = (ms) => (Number.isFinite(ms) ? ms : 0);
  const msPerCall = r.cpuMsPerCall + r.postgresMsPerCall + finiteOrZero(r.redisMsPerCall) + finiteOrZero(r.apiMsPerCall);
  return msPerCall > 0 ? (cpus().length * 1000) / msPerCall : NaN;
}

function latencyTable(rows) {
  return [
    '| trigger→dial, 1 dialer | offered/s | answered/s | answer p50 / p99 ms | dial lag p50 ms | dial lag p99 ms | max ms | dialed / answered | shed | failed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.seconds} s per round | ${r.rate} | ${cell(r.answeredPerSecond)} | ${cell(r.answerP50)} / ${cell(r.answerP99)} | ` +
        `${cell(r.dialP50)} | ${cell(r.dialP99)} | ${cell(r.dialMax)} | ${r.dialed} / ${r.measured} | ${r.shed} | ${r.failed} |`,
    ),
  ].join('\n');
}

/** Where the trigger→dial time goes: p50 / p99 of each stage, per offered rate. */
function latencyStagesTable(rows, stages) {
  return [
    `| trigger→dial by stage, ms p50 / p99 | offered/s | ${stages.map(({ name }) => name).join(' | ')} |`,
    `|---|---:|${stages.map(() => '---:').join('|')}|`,
    ...rows.map(
      (r) =>
        `| ${r.seconds} s per round | ${r.rate} | ` +
        stages.map(({ name }) => `${cell(r.stages[name].p50)} / ${cell(r.stages[name].p99)}`).join(' | ') +
        ' |',
    ),
  ].join('\n');
}

/**
 * What a trigger and its call cost each process at each offered rate (medians
 * of the rounds), and all of them together (`figures.together`), under the same processes' CPU with no triggers at all (per
 * second, not per trigger) when `idle` was measured.
 */
function latencyCpuTable(rows, parts, idle = null) {
  const line = (label, rate, figures, machinePercent) =>
    `| ${label} | ${rate} | ${parts.map((part) => cell(figures[part], 2)).join(' | ')} | ${cell(figures.together, 2)} | ${cell(machinePercent)} |`;
  return [
    `| trigger→dial, CPU ms per trigger, its call included | offered/s | ${parts.join(' | ')} | together | CPU % machine (${cpus().length * 100} = all cores busy) |`,
    `|---|---:|${parts.map(() => '---:').join('|')}|---:|---:|`,
    ...(idle ? [line(`idle: CPU ms per second, no triggers, ${idle.seconds} s`, 0, idle.msPerSecond, idle.machinePercent)] : []),
    ...rows.map((r) => line(`${r.seconds} s per round`, r.rate, r.cpuMs, r.machinePercent)),
  ].join('\n');
}

/**
 * The bare route's CPU per request as requests arrive at a fixed rate, one at
 * a time, against the same route at full speed (the ceiling's rounds): what
 * this machine charges for work that comes a request at a time, which the
 * latency scenario's rates pay on every process of a call.
 */
function ceilingByRateTable(rows, fullSpeed) {
  return [
    '| bare Fastify route, server CPU per request by how requests arrive | offered/s | answered/s | server CPU µs per request | × full speed |',
    '|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| fixed rate, ${r.seconds} s | ${r.rate} | ${cell(r.answeredPerSecond)} | ${cell(r.cpuMicros)} | ${cell(r.cpuMicros / fullSpeed.cpuMicros, 1)} |`,
    ),
    `| full speed (the ceiling's rounds, median) | – | ${cell(fullSpeed.rps)} | ${cell(fullSpeed.cpuMicros)} | 1.0 |`,
  ].join('\n');
}

/**
 * Each figure with the history against the same figure measured just before
 * it was inserted, and whether any of the judged ones got worse by more than
 * `tolerance` (scripts/bench/targets.js says which are judged, and how).
 */
function historyTable(rows, tolerance) {
  const change = (before, after) => (before > 0 ? `${after >= before ? '+' : '−'}${cell((Math.abs(after - before) / before) * 100)} %` : '–');
  const judged = HISTORY_FIGURES.filter((f) => f.worse !== 0).map((f) => f.title);
  return [
    `| with the history, against the twin without it | ${HISTORY_FIGURES.map((f) => f.title).join(' | ')} | none of ${judged.join(', ')} worse by more than ${cell(tolerance * 100)} % (and latencies by more than 1 ms) |`,
    `|---|${HISTORY_FIGURES.map(() => '---:').join('|')}|---|`,
    ...rows.map(({ name, before, after }) => {
      const cells = HISTORY_FIGURES.map(
        ({ key, digits }) => `${cell(before[key], digits)} → ${cell(after[key], digits)} (${change(before[key], after[key])})`,
      );
      return `| ${name} | ${cells.join(' | ')} | ${worseWithHistory(before, after, tolerance) ? 'no' : 'yes'} |`;
    }),
  ].join('\n');
}

function soakTable(r, growingThreshold) {
  const row = (name, m) =>
    `| ${name} | ${cell(m.first)} | ${cell(m.last)} | ${cell(m.max)} | ${cell(m.slope, 2)} | ${cell(m.leastSquaresSlope, 2)} |`;
  return [
    `Soak: ${cell(r.rate)} triggers/s offered for ${r.seconds} s (answered ${cell(r.load.answeredPerSecond)}/s, ` +
      `p50 ${cell(r.load.p50)} ms, p99 ${cell(r.load.p99)} ms, failed ${r.load.failed}, shed ${r.load.shed}), ${r.samples} samples. ` +
      `API RSS: ${r.verdict} (last-half Theil–Sen slope against ${growingThreshold} MiB/min).`,
    '',
    '| RSS MiB | first | last | max | last-half slope MiB/min, Theil–Sen | the same, least squares |',
    '|---|---:|---:|---:|---:|---:|',
    row('api', r.api),
    row('dialer', r.dialer),
  ].join('\n');
}

module.exports = { ceilingByRateTable, httpTable, dialerTable, historyTable, latencyCpuTable, latencyTable, latencyStagesTable, soakTable };
