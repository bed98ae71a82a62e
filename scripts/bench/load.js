'use strict';
// Load generators: autocannon for closed-loop throughput (as many requests as
// the server answers), and a fixed-rate open-loop client for the scenarios
// that need a steady offered rate and each response's body.

const http = require('node:http');
const autocannon = require('autocannon');
const { median, percentile } = require('./stats');
const { cpuSeconds, sleep } = require('./processes');

/**
 * Rounds of autocannon against one request; medians of throughput and latency
 * over the rounds, and of the server's CPU time per answered request when its
 * process id (`pid`) is given: a figure the machine's other load moves far less
 * than requests/s. `measure`, when given, is started before each round and
 * its result called with the number of answered requests after it (as
 * BenchStack.measurePostgres does); the medians of the figures it gives per
 * request join the row.
 */
async function throughputRounds(name, options, { rounds, seconds, connections, log, pid, measure }) {
  const [row] = await alternatingRounds([{ name, options, pid, measure }], { rounds, seconds, connections, log });
  return row;
}

/**
 * Rounds of several arms taken in turn, the order reversed every other round
 * (A B, B A, A B, ...), so that the machine's speed drifting over the minutes
 * falls on every arm alike: for comparing two setups that cannot run in one
 * process. Each arm is `{ name, options, pid, measure, before }`, as for
 * throughputRounds, `before` awaited ahead of each of its rounds. Answers a
 * row of medians per arm, in the arms' order.
 */
async function alternatingRounds(arms, { rounds, seconds, connections, log }) {
  const results = arms.map(() => []);
  for (let round = 0; round < rounds; round++) {
    const order = arms.map((_, index) => index);
    if (round % 2 === 1) order.reverse();
    for (const index of order) {
      const { name, options, pid, measure, before } = arms[index];
      await before?.();
      results[index].push(await oneRound(options, { seconds, connections, pid, measure }));
      log(`${name}, round ${round + 1}: ${roundLine(results[index][round])}`);
    }
  }
  return arms.map(({ name }, index) => {
    const row = rowOf(name, results[index]);
    log(`${name} (medians): ${roundLine(row)}`);
    return row;
  });
}

async function oneRound(options, { seconds, connections, pid, measure }) {
  const cpuFrom = pid ? cpuSeconds(pid) : NaN;
  const measured = measure ? await measure() : null;
  const result = await autocannon(perRequest({ ...options(), connections, duration: seconds }));
  const answered = result.requests.total;
  return {
    // Only 2xx answers count as served (autocannon's `duration` is in seconds); its average of per-second
    // counts would take error answers for throughput.
    rps: result.duration > 0 ? result['2xx'] / result.duration : NaN,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: failures(result),
    cpuMicros: pid && answered > 0 ? ((cpuSeconds(pid) - cpuFrom) * 1e6) / answered : NaN,
    ...(measured ? await measured(answered) : {}),
  };
}

/** A row of rounds: the medians of each figure, the errors summed. */
function rowOf(name, results) {
  const row = { name, errors: results.reduce((sum, r) => sum + r.errors, 0) };
  for (const key of Object.keys(results[0])) if (key !== 'errors') row[key] = median(results.map((r) => r[key]));
  return row;
}

function roundLine(figures) {
  const parts = [`${Math.round(figures.rps)} req/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, errors ${figures.errors}`];
  if (Number.isFinite(figures.cpuMicros)) parts.push(`server CPU ${Math.round(figures.cpuMicros)} µs/request`);
  if (Number.isFinite(figures.postgresCpuMicros)) {
    parts.push(
      `Postgres ${Math.round(figures.postgresCpuMicros)} µs, WAL ${Math.round(figures.walBytes)} B, ` +
        `${figures.fullPageImages.toFixed(2)} full-page images, ${figures.blocksRead.toFixed(2)} blocks read per request`,
    );
  }
  return parts.join(', ');
}

/**
 * autocannon calls a `setupRequest` given among its options once, for the
 * first request, and sends that request over and over; given as a request's
 * own (`requests: [{ setupRequest }]`) it is called before every request,
 * the options still giving the method, headers and body it starts from.
 */
function perRequest(options) {
  const { setupRequest, ...rest } = options;
  return setupRequest ? { ...rest, requests: [{ setupRequest }] } : options;
}

/** Sends exactly `amount` requests as fast as the server takes them; answers how many failed. */
async function sendAmount(options, amount, connections) {
  const result = await autocannon(perRequest({ ...options, connections, amount }));
  return { sent: result.requests.sent, failed: failures(result) };
}

/** Requests that got no answer or a non-2xx one; autocannon counts a timeout in `errors` as well as `timeouts`. */
function failures(result) {
  return result.errors + result.non2xx;
}

/**
 * Offers `rate` requests per second for `seconds`, whatever the server's pace
 * (no coordinated omission: latency counts from when a request was due). At
 * most `connections` requests are in flight; when about a second's worth is
 * waiting behind them the client sheds further requests rather than queue
 * without bound, and counts them. Each answer is kept: when it was due, when
 * it was answered (wall clock, comparable with Postgres' now()), its status
 * and the `workflow_run_id` it carried.
 */
async function fixedRate({ url, method = 'POST', headers = {}, body = '', setupRequest, rate, seconds, connections }) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const fixed = { headers, payload: Buffer.from(body) };
  // As autocannon does with a request's own `setupRequest`: called before each request, its answer's headers and body sent.
  const requestOf = setupRequest
    ? () => {
        const next = setupRequest({ method, headers, body });
        return { headers: next.headers, payload: Buffer.from(next.body) };
      }
    : () => fixed;
  const intervalMs = 1000 / rate;
  const total = Math.max(1, Math.round(rate * seconds));
  const maxPending = connections + Math.ceil(rate);
  const answers = [];
  let pending = 0;
  let shed = 0;

  const send = (dueAt) =>
    new Promise((resolve) => {
      const { headers: sentHeaders, payload } = requestOf();
      let settled = false;
      const settle = (status, responseBody) => {
        if (settled) return;
        settled = true;
        let runId = null;
        if (status >= 200 && status < 300) {
          try {
            runId = JSON.parse(responseBody).workflow_run_id ?? null;
          } catch {
            runId = null;
          }
        }
        answers.push({ dueAt, answeredAt: Date.now(), status, runId });
        resolve();
      };
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method,
          headers: { ...sentHeaders, 'content-length': payload.length },
          agent,
          timeout: 60000,
        },
        (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => settle(response.statusCode, Buffer.concat(chunks).toString()));
          response.on('error', () => settle(0, ''));
        },
      );
      request.on('timeout', () => request.destroy(new Error('timed out')));
      request.on('error', () => settle(0, ''));
      request.end(payload);
    });

  const start = Date.now() + 10;
  let next = 0;
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      const now = Date.now();
      while (next < total && start + next * intervalMs <= now) {
        const dueAt = start + next * intervalMs;
        next++;
        if (pending >= maxPending) {
          shed++;
          continue;
        }
        pending++;
        void send(dueAt).then(() => pending--);
      }
      if (next >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 2);
  });
  while (pending > 0) await sleep(20);
  agent.destroy();
  return { start, seconds, rate, answers, shed };
}

/**
 * A fixedRate round against a server of ours, with the server's CPU time per
 * answered request (utime + stime of `pid` over the round).
 */
async function fixedRateCpu({ pid, ...options }) {
  const cpuFrom = cpuSeconds(pid);
  const load = await fixedRate(options);
  const cpu = cpuSeconds(pid) - cpuFrom;
  const summary = summarizeFixedRate(load);
  return { rate: options.rate, seconds: options.seconds, ...summary, cpuMicros: summary.ok > 0 ? (cpu * 1e6) / summary.ok : NaN };
}

/** The figures of a fixedRate result: answered per second, latency from due time, failures. */
function summarizeFixedRate({ start, answers, shed }) {
  const ok = answers.filter((answer) => answer.status >= 200 && answer.status < 300);
  const lastAnswer = answers.reduce((last, answer) => Math.max(last, answer.answeredAt), start);
  const latencies = ok.map((answer) => answer.answeredAt - answer.dueAt);
  return {
    ok: ok.length,
    failed: answers.length - ok.length,
    shed,
    answeredPerSecond: ok.length / Math.max(0.001, (lastAnswer - start) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

module.exports = { throughputRounds, alternatingRounds, sendAmount, fixedRate, fixedRateCpu, summarizeFixedRate };
