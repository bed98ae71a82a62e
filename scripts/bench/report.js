'use strict';
// The markdown tables the bench prints.

const { cpus } = require('node:os');
const { cell } = require('./stats');

function httpTable(rows, ceilingRps) {
  const ratio = (rps) => (ceilingRps ? cell(rps / ceilingRps, 2) : '–');
  return [
    '| scenario | req/s | × ceiling | p50 ms | p99 ms | errors | server CPU µs per request |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${cell(r.rps)} | ${ratio(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} | ${Number.isFinite(r.cpuMicros) ? cell(r.cpuMicros) : '–'} |`,
    ),
  ].join('\n');
}

function dialerTable(rows) {
  return [
    '| dialer (sandbox, ring 0, talk 0) | dials/s (median per-second, steady) | per-second min–max | steady s | backlog | runs finished/s | unfinished ' +
      `| dialer CPU ms per call | CPU % per dialer | CPU % Postgres | CPU % Redis | CPU % machine (${cpus().length * 100} = all cores busy) |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${cell(r.perSecond)} | ${cell(r.min)}–${cell(r.max)} | ${cell(r.steadySeconds)} | ${cell(r.backlog)} | ` +
        `${cell(r.finishedPerSecond)} | ${r.unfinished} | ${Number.isFinite(r.cpuMsPerCall) ? r.cpuMsPerCall.toFixed(2) : '–'} | ${cell(r.cpuPercent)} | ${cell(r.postgresPercent)} | ${cell(r.redisPercent)} | ${cell(r.machinePercent)} |`,
    ),
  ].join('\n');
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
 * Each figure with the history against the same figure measured just before
 * it was inserted, and whether any got worse by more than `tolerance`.
 */
function historyTable(rows, tolerance) {
  const change = (before, after) => (before > 0 ? `${after >= before ? '+' : '−'}${cell((Math.abs(after - before) / before) * 100)} %` : '–');
  const pair = (before, after) => `${cell(before)} → ${cell(after)} (${change(before, after)})`;
  return [
    `| with the history, against just before it | req/s | p50 ms | p99 ms | server CPU µs per request | no figure worse by more than ${cell(tolerance * 100)} % |`,
    '|---|---:|---:|---:|---:|---|',
    ...rows.map(({ name, before, after }) => {
      const worse =
        after.rps < before.rps * (1 - tolerance) || after.p50 > before.p50 * (1 + tolerance) || after.p99 > before.p99 * (1 + tolerance) ||
        after.cpuMicros > before.cpuMicros * (1 + tolerance);
      return (
        `| ${name} | ${pair(before.rps, after.rps)} | ${pair(before.p50, after.p50)} | ${pair(before.p99, after.p99)} | ` +
        `${pair(before.cpuMicros, after.cpuMicros)} | ${worse ? 'no' : 'yes'} |`
      );
    }),
  ].join('\n');
}

function soakTable(r, growingThreshold) {
  const row = (name, m) =>
    `| ${name} | ${cell(m.first)} | ${cell(m.last)} | ${cell(m.max)} | ${cell(m.slope, 2)} |`;
  return [
    `Soak: ${cell(r.rate)} triggers/s offered for ${r.seconds} s (answered ${cell(r.load.answeredPerSecond)}/s, ` +
      `p50 ${cell(r.load.p50)} ms, p99 ${cell(r.load.p99)} ms, failed ${r.load.failed}, shed ${r.load.shed}), ${r.samples} samples. ` +
      `API RSS: ${r.verdict} (last-half slope against ${growingThreshold} MiB/min).`,
    '',
    '| RSS MiB | first | last | max | last-half slope MiB/min |',
    '|---|---:|---:|---:|---:|',
    row('api', r.api),
    row('dialer', r.dialer),
  ].join('\n');
}

module.exports = { httpTable, dialerTable, historyTable, latencyTable, latencyStagesTable, soakTable };
