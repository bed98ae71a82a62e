'use strict';
// Memory under a long steady load: the API's resident set, sampled while
// triggers arrive at a fixed rate (the dialer working through them), to see
// whether it levels off or keeps growing.
//
// The RSS of a process under steady load is a sawtooth (on this machine one of
// about 6 MiB every 12–14 s, the young generation filling and being
// collected), so the verdict is the Theil–Sen slope of the last half sampled
// every 2 s. A least-squares line through samples 10 s apart caught that
// sawtooth at one phase or another: one 300-s soak sampled every 2 s gave
// last-half slopes from 0.00 to 1.05 MiB/min over the five ways of taking
// every fifth sample, against 0.41 for the least-squares line and 0.00 for
// Theil–Sen through all of them.

const { fixedRate, summarizeFixedRate } = require('./load');
const { memoryMiB } = require('./processes');
const { medianSlope, slope } = require('./stats');

/** A last-half Theil–Sen slope above this (MiB per minute) counts as still growing. */
const GROWING_MIB_PER_MINUTE = 1;
/** Fewer samples than this in the last half tell noise (a GC, a burst) from a trend too poorly to judge. */
const MIN_TREND_SAMPLES = 5;

async function soak(stack, trigger, { rate, seconds, sampleSeconds, connections, log }) {
  const dialer = [...stack.dialers][0];
  const samples = [];
  const sample = (at) => {
    samples.push({ at, api: stack.apiRssMiB(), dialer: dialer ? memoryMiB(dialer.pid, 'VmRSS') : NaN });
    const last = samples[samples.length - 1];
    log(`soak ${Math.round(at)} s: api ${Math.round(last.api)} MiB, dialer ${Math.round(last.dialer)} MiB`);
  };
  const started = Date.now();
  sample(0);
  const timer = setInterval(() => sample((Date.now() - started) / 1000), sampleSeconds * 1000);
  let load;
  try {
    load = await fixedRate({ ...trigger, rate, seconds, connections });
  } finally {
    clearInterval(timer);
  }
  const end = (Date.now() - started) / 1000;
  if (end - samples[samples.length - 1].at > 1) sample(end);

  const lastHalf = samples.filter((s) => s.at >= seconds / 2);
  const perMinute = (fit, key) => fit(lastHalf.map((s) => [s.at, s[key]])) * 60;
  const figures = (key) => ({
    first: samples[0][key],
    last: samples[samples.length - 1][key],
    max: Math.max(...samples.map((s) => s[key])),
    slope: perMinute(medianSlope, key),
    leastSquaresSlope: perMinute(slope, key),
  });
  const api = figures('api');
  return {
    rate,
    seconds,
    samples: samples.length,
    load: summarizeFixedRate(load),
    api,
    dialer: figures('dialer'),
    verdict: verdictOf(lastHalf, api.slope),
  };
}

function verdictOf(lastHalf, apiSlope) {
  if (lastHalf.length < MIN_TREND_SAMPLES) return 'too few samples to judge';
  // A sample the API did not answer (it died) leaves no trend: a NaN slope is not above the line, but not flat either.
  if (!Number.isFinite(apiSlope) || !lastHalf.every((s) => Number.isFinite(s.api))) return 'RSS not sampled throughout, not judged';
  return apiSlope > GROWING_MIB_PER_MINUTE ? 'KEPT GROWING' : 'levelled off';
}

module.exports = { soak, GROWING_MIB_PER_MINUTE };
