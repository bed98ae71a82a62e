'use strict';
// Trigger-to-dial latency at a steady offered rate, the dialer running: for
// each trigger answered, (when the sandbox carrier was asked to dial its run)
// − (when the client received the answer). Both clocks are this machine's:
// Date.now() here, Postgres' now() in the sandbox ledger.

const { fixedRate, summarizeFixedRate } = require('./load');
const { median, percentile } = require('./stats');

/** Triggers due in the first this many ms are warm-up and left out of the figures. */
const WARMUP_MS = 2000;

async function triggerToDial(stack, trigger, { rate, seconds, rounds, connections, log }) {
  const results = [];
  for (let round = 0; round < rounds; round++) {
    await stack.waitDrained();
    const load = await fixedRate({ ...trigger, rate, seconds, connections });
    const answered = summarizeFixedRate(load);
    const measured = load.answers.filter((answer) => answer.runId !== null && answer.dueAt >= load.start + WARMUP_MS);
    const runIds = measured.map((answer) => answer.runId);
    await stack.waitForCount(`SELECT count(DISTINCT run_id)::int AS n FROM sandbox_calls WHERE run_id = ANY($1::int[])`, [runIds], runIds.length);
    const dialedAt = new Map(
      (
        await stack.query(
          `SELECT run_id, extract(epoch FROM min(created_at)) * 1000 AS at FROM sandbox_calls
            WHERE run_id = ANY($1::int[]) GROUP BY run_id`,
          [runIds],
        )
      ).map((row) => [row.run_id, Number(row.at)]),
    );
    const lags = measured.filter((answer) => dialedAt.has(answer.runId)).map((answer) => dialedAt.get(answer.runId) - answer.answeredAt);
    const result = {
      ...answered,
      measured: measured.length,
      dialed: lags.length,
      dialP50: percentile(lags, 50),
      dialP99: percentile(lags, 99),
      dialMax: lags.length ? Math.max(...lags) : NaN,
    };
    log(
      `trigger→dial round ${round + 1}: offered ${rate}/s, answered ${Math.round(result.answeredPerSecond)}/s ` +
        `(shed ${result.shed}, failed ${result.failed}), dial lag p50 ${Math.round(result.dialP50)} ms, ` +
        `p99 ${Math.round(result.dialP99)} ms, ${result.dialed}/${result.measured} dialed`,
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
    shed: sum('shed'),
    failed: sum('failed'),
  };
}

module.exports = { triggerToDial };
