'use strict';

const { targetRows, targetsTable, worseWithHistory } = require('./targets');

const http = (rps, p99, errors = 0) => ({ rps, p50: Math.max(1, Math.round(p99 / 3)), p99, errors, cpuMicros: 100 });
const historyRow = (name, before, after) => ({ name, before, after });
const latencyAt = (rate, dialP50, dialP99, answered = { answeredPerSecond: rate, shed: 0, failed: 0 }, dials = { measured: 100, dialed: 100, duplicates: 0 }) => ({
  rate,
  dialP50,
  dialP99,
  ...answered,
  ...dials,
});
const soakOf = (verdict, api, seconds = 300, load = { shed: 0, failed: 0 }) => ({ verdict, api, seconds, load });
const dialerRow = (dialers, perSecond, duplicates = 0) => ({ dialers, perSecond, finishedPerSecond: perSecond, duplicates });

/** A run that meets every target, each figure just inside its line. */
function allMet() {
  return {
    ceilingRps: 30000,
    trigger: http(6000, 29),
    triggerAlone: http(6100, 28),
    triggerIdempotent: http(6000, 29),
    getRun: http(4500, 29),
    dialers: [dialerRow(1, 2000), dialerRow(2, 3300)],
    latency: [latencyAt(250, 5, 20), latencyAt(1000, 14, 59)],
    apiPeakMiB: 249,
    soak: soakOf('levelled off', { first: 180, last: 178, slope: -0.5 }),
    historyRuns: 1000000,
    history: [historyRow('POST trigger', http(6000, 29), http(5500, 30)), historyRow('GET run, the newest runs', http(4500, 20), http(4400, 21))],
  };
}

const verdicts = (measured) => Object.fromEntries(targetRows(measured).map(({ target, met }) => [target, met]));
const metOf = (measured, prefix) => {
  const rows = targetRows(measured).filter(({ target }) => target.startsWith(prefix));
  expect(rows).toHaveLength(1);
  return rows[0];
};

describe('bench targets', () => {
  it('meets every target when each figure is inside its line', () => {
    const met = verdicts(allMet());
    expect(Object.keys(met)).toHaveLength(10);
    expect(Object.values(met).every((verdict) => verdict === 'yes')).toBe(true);
  });

  it('misses the trigger target on its ratio, its p99 or a single error', () => {
    const slow = { ...allMet(), trigger: http(5999, 29) };
    expect(metOf(slow, 'POST trigger (the dialer').met).toBe('no');
    expect(metOf(slow, 'POST trigger (the dialer').measured).toBe('0.19× (5999 req/s), p99 29 ms, 0 errors');
    expect(metOf({ ...allMet(), triggerAlone: http(9000, 30) }, 'POST trigger, the dialer stopped').met).toBe('no');
    expect(metOf({ ...allMet(), triggerIdempotent: http(9000, 10, 1) }, 'POST trigger + Idempotency-Key').met).toBe('no');
  });

  it('misses the read target below 0.15× the ceiling or with errors', () => {
    expect(metOf({ ...allMet(), getRun: http(4499, 10) }, 'GET run').met).toBe('no');
    expect(metOf({ ...allMet(), getRun: http(9000, 10, 3) }, 'GET run').met).toBe('no');
  });

  it('judges two dialers against 1.6× the one measured in the same run', () => {
    const run = { ...allMet(), dialers: [dialerRow(1, 2500), dialerRow(2, 3200)] };
    expect(metOf(run, 'one dialer').met).toBe('yes');
    expect(metOf(run, 'two dialers')).toMatchObject({ met: 'no', measured: '1.28× (3200 dials/s, 3200 finished/s, 0 duplicate dials)' });
  });

  it('misses a dialer target on a single duplicate dial, however fast', () => {
    const run = { ...allMet(), dialers: [dialerRow(1, 2500, 1), dialerRow(2, 5000, 2)] };
    expect(metOf(run, 'one dialer')).toMatchObject({ met: 'no', measured: '2500 dials/s, 2500 finished/s, 1 duplicate dials' });
    expect(metOf(run, 'two dialers').met).toBe('no');
  });

  it('judges trigger → dial only at 1,000 triggers/s, on both percentiles', () => {
    const only250 = { ...allMet(), latency: [latencyAt(250, 5, 20)] };
    expect(metOf(only250, 'trigger → dial')).toMatchObject({ met: '–', measured: 'not measured' });
    expect(metOf({ ...allMet(), latency: [latencyAt(1000, 15, 30)] }, 'trigger → dial').met).toBe('no');
    expect(metOf({ ...allMet(), latency: [latencyAt(1000, 10, 60)] }, 'trigger → dial').met).toBe('no');
  });

  it('misses trigger → dial when the API did not take the rate, however fast the dials it took', () => {
    const shed = latencyAt(1000, 5, 20, { answeredPerSecond: 990, shed: 12, failed: 0 });
    expect(metOf({ ...allMet(), latency: [shed] }, 'trigger → dial')).toMatchObject({
      met: 'no',
      measured: 'p50 5 ms, p99 20 ms (answered 990/s, shed 12, failed 0, dialed 100/100, 0 duplicate dials)',
    });
    const slow = latencyAt(1000, 5, 20, { answeredPerSecond: 900, shed: 0, failed: 0 });
    expect(metOf({ ...allMet(), latency: [slow] }, 'trigger → dial').met).toBe('no');
    const failing = latencyAt(1000, 5, 20, { answeredPerSecond: 1000, shed: 0, failed: 1 });
    expect(metOf({ ...allMet(), latency: [failing] }, 'trigger → dial').met).toBe('no');
  });

  it('misses trigger → dial when a measured run was never dialed or was dialed twice', () => {
    const kept = { answeredPerSecond: 1000, shed: 0, failed: 0 };
    const undialed = latencyAt(1000, 5, 20, kept, { measured: 100, dialed: 99, duplicates: 0 });
    expect(metOf({ ...allMet(), latency: [undialed] }, 'trigger → dial').met).toBe('no');
    const twice = latencyAt(1000, 5, 20, kept, { measured: 100, dialed: 100, duplicates: 1 });
    expect(metOf({ ...allMet(), latency: [twice] }, 'trigger → dial').met).toBe('no');
  });

  it('misses memory at 250 MiB, and the soak only when the API kept growing', () => {
    expect(metOf({ ...allMet(), apiPeakMiB: 250 }, 'API RSS < 250').met).toBe('no');
    const growing = { ...allMet(), soak: soakOf('KEPT GROWING', { first: 150, last: 210, slope: 9 }) };
    expect(metOf(growing, 'API RSS flat').met).toBe('no');
    const unjudged = { ...allMet(), soak: soakOf('too few samples to judge', { first: 150, last: 151, slope: NaN }) };
    expect(metOf(unjudged, 'API RSS flat').met).toBe('–');
  });

  it('misses the soak when the API shed or failed requests, however flat its memory', () => {
    const flat = { first: 180, last: 178, slope: -0.5 };
    expect(metOf({ ...allMet(), soak: soakOf('levelled off', flat, 300, { shed: 3, failed: 0 }) }, 'API RSS flat').met).toBe('no');
    const failing = metOf({ ...allMet(), soak: soakOf('levelled off', flat, 300, { shed: 0, failed: 1 }) }, 'API RSS flat');
    expect(failing.met).toBe('no');
    expect(failing.measured).toContain('shed 0, failed 1');
  });

  it('does not judge a soak shorter than 5 minutes, nor one whose samples are missing', () => {
    const short = metOf({ ...allMet(), soak: soakOf('levelled off', { first: 150, last: 150, slope: 0 }, 60) }, 'API RSS flat');
    expect(short).toMatchObject({ met: '–' });
    expect(short.measured).toContain('(the target is for 300 s)');
    // A slope of NaN is not above the threshold, so soak.js calls it levelled off: the API answered no samples.
    const dead = metOf({ ...allMet(), soak: soakOf('levelled off', { first: NaN, last: NaN, slope: NaN }) }, 'API RSS flat');
    expect(dead.met).toBe('–');
  });

  it('never reads a missing figure as met', () => {
    expect(metOf({ ...allMet(), getRun: http(NaN, 10) }, 'GET run').met).toBe('–');
    expect(metOf({ ...allMet(), trigger: http(9000, NaN) }, 'POST trigger (the dialer').met).toBe('–');
    const noDials = { ...allMet(), dialers: [dialerRow(1, 0), dialerRow(2, 0)] };
    expect(metOf(noDials, 'one dialer').met).toBe('no');
    expect(metOf(noDials, 'two dialers').met).toBe('–');
    expect(metOf({ ...allMet(), latency: [latencyAt(1000, NaN, NaN)] }, 'trigger → dial').met).toBe('–');
    const unmeasured = { ...http(5000, 20), cpuMicros: NaN };
    const history = { ...allMet(), history: [historyRow('POST trigger', http(5000, 20), unmeasured)] };
    expect(metOf(history, '1,000,000 runs stored')).toMatchObject({ met: '–', measured: 'figures missing: POST trigger' });
  });

  it('names the history rows that got worse; fewer runs stored than the target names can only miss it', () => {
    const worse = [historyRow('POST trigger', http(6000, 29), http(5000, 29)), historyRow('GET run, the newest runs', http(4500, 20), http(4500, 21))];
    expect(metOf({ ...allMet(), history: worse }, '1,000,000 runs stored')).toMatchObject({ met: 'no', measured: 'worse: POST trigger' });
    const fewer = metOf({ ...allMet(), historyRuns: 200000, history: worse }, '1,000,000 runs stored');
    expect(fewer.target).toContain('(200,000 in this run)');
    expect(fewer.met).toBe('no');
    const fewerNoneWorse = metOf({ ...allMet(), historyRuns: 200000 }, '1,000,000 runs stored');
    expect(fewerNoneWorse).toMatchObject({ met: '–', measured: 'none worse, of 2 compared' });
  });

  it('misses the history target when either side answered errors', () => {
    const erred = [historyRow('POST trigger', http(6000, 29, 2), http(6000, 29)), historyRow('GET run, the newest runs', http(4500, 20), http(4500, 20, 1))];
    expect(metOf({ ...allMet(), history: erred }, '1,000,000 runs stored')).toMatchObject({
      met: 'no',
      measured: 'none worse, of 2 compared; errors: POST trigger (2 → 0); GET run, the newest runs (0 → 1)',
    });
  });

  it('counts a latency as worse only past autocannon\'s 1 ms step', () => {
    expect(worseWithHistory(http(1000, 4), http(1000, 5), 0.1)).toBe(false);
    expect(worseWithHistory(http(1000, 4), http(1000, 6), 0.1)).toBe(true);
    expect(worseWithHistory(http(1000, 4), http(899, 4), 0.1)).toBe(true);
    expect(worseWithHistory({ ...http(1000, 4), postgresCpuMicros: 10 }, { ...http(1000, 4), postgresCpuMicros: 90 }, 0.1)).toBe(false);
  });

  it('says "not measured" for every scenario left out, and prints one table row per target', () => {
    const none = { ceilingRps: null, dialers: [], latency: [], apiPeakMiB: NaN, soak: null, historyRuns: 1000000, history: [] };
    const rows = targetRows(none);
    expect(rows).toHaveLength(10);
    expect(rows.map(({ measured }) => measured)).toEqual(rows.map(() => 'not measured'));
    const table = targetsTable(allMet()).split('\n');
    expect(table).toHaveLength(12);
    expect(table[0]).toBe('| target | measured in this run | met |');
  });

  it('gives the req/s without a ratio when no ceiling was measured', () => {
    const row = metOf({ ...allMet(), ceilingRps: null }, 'GET run');
    expect(row).toMatchObject({ met: '–', measured: '4500 req/s, no ceiling measured' });
  });
});
