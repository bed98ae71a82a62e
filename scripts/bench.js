#!/usr/bin/env node
/*
 * npm run bench: builds the apps, starts the API and one dialer against the
 * local Postgres and Redis (a database and queue prefix of its own), and
 * measures with autocannon, printing one table of medians over repeated
 * rounds:
 *   - the ceiling: a bare Fastify route answering constant JSON, same harness;
 *   - POST /api/v1/public/agent/{uuid} with a realistic body (~1 KiB context);
 *   - the same with an Idempotency-Key on every request;
 *   - GET /api/v1/workflow/{id}/runs/{run_id} over many distinct runs;
 *   - peak RSS of the API and the dialer.
 * Knobs: BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_CONNECTIONS (100).
 */
'use strict';

const { spawn, execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { readFileSync, mkdtempSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');

const ROOT = join(__dirname, '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 100);
const POSTGRES = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

const children = [];

main().catch((error) => {
  process.stderr.write(`bench failed: ${error.stack || error}\n`);
  process.exitCode = 1;
}).finally(() => {
  for (const child of children) child.kill('SIGKILL');
});

async function main() {
  log('building the apps');
  execFileSync(process.execPath, [join(ROOT, 'node_modules/@nestjs/cli/bin/nest.js'), 'build', 'api'], { cwd: ROOT, stdio: 'ignore' });
  execFileSync(process.execPath, [join(ROOT, 'node_modules/@nestjs/cli/bin/nest.js'), 'build', 'dialer'], { cwd: ROOT, stdio: 'ignore' });

  const id = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const databaseUrl = `${POSTGRES}/va_bench_${id}`;
  const artifacts = mkdtempSync(join(tmpdir(), 'va-bench-'));
  const apiPort = await freePort();
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    QUEUE_PREFIX: `{va-bench-${id}}`,
    SECRETS_KEY: randomBytes(32).toString('hex'),
    ARTIFACTS_DIR: artifacts,
    LOG_LEVEL: 'warn',
    PORT: String(apiPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
  };
  try {
    execFileSync(process.execPath, [join(ROOT, 'scripts/cli.js'), 'migrate'], { env, stdio: 'ignore' });
    const { api_key: key } = JSON.parse(
      execFileSync(process.execPath, [join(ROOT, 'scripts/cli.js'), 'bootstrap', '--org', 'Bench', '--json'], { env }).toString(),
    );

    const api = start('api', [join(ROOT, 'dist/apps/api/apps/api/src/main.js')], env);
    const dialer = start('dialer', [join(ROOT, 'dist/apps/dialer/apps/dialer/src/main.js')], {
      ...env,
      DIALER_HEALTH_PORT: String(await freePort()),
    });
    const base = `http://127.0.0.1:${apiPort}`;
    await waitUp(`${base}/health/ready`);
    const { uuid, workflowId } = await seed(base, key);

    const ceiling = await startCeiling();
    const body = JSON.stringify({ phone_number: '+14155550100', initial_context: realisticContext() });

    log(`measuring: ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections`);
    const rows = [];
    rows.push(await scenario('ceiling: bare Fastify constant JSON', () => ({ url: `${ceiling.url}/`, method: 'GET' })));
    rows.push(
      await scenario('POST trigger', () => ({
        url: `${base}/api/v1/public/agent/${uuid}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body,
      })),
    );
    let sequence = 0;
    rows.push(
      await scenario('POST trigger + Idempotency-Key', () => ({
        url: `${base}/api/v1/public/agent/${uuid}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body,
        setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': `bench-${id}-${sequence++}` } }),
      })),
    );
    const runIds = await recentRunIds(base, key, workflowId, 2000);
    let next = 0;
    rows.push(
      await scenario(`GET run (${runIds.length} distinct runs)`, () => ({
        url: `${base}/api/v1/workflow/${workflowId}/runs/${runIds[0]}`,
        method: 'GET',
        headers: { 'x-api-key': key },
        setupRequest: (request) => ({
          ...request,
          path: `/api/v1/workflow/${workflowId}/runs/${runIds[next++ % runIds.length]}`,
        }),
      })),
    );

    const ceilingRps = rows[0].rps;
    process.stdout.write(`\n${table(rows, ceilingRps)}\n`);
    process.stdout.write(
      `peak RSS: api ${peakRssMiB(api.pid)} MiB, dialer ${peakRssMiB(dialer.pid)} MiB ` +
        `(medians of ${ROUNDS} rounds × ${SECONDS} s, ${CONNECTIONS} connections; node ${process.version})\n`,
    );
    ceiling.child.kill('SIGKILL');
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 500));
    dropDatabase(databaseUrl);
    rmSync(artifacts, { recursive: true, force: true });
  }
}

async function scenario(name, options) {
  const results = [];
  for (let round = 0; round < ROUNDS; round++) {
    const result = await autocannon({ ...options(), connections: CONNECTIONS, duration: SECONDS });
    results.push({
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts + result.non2xx,
    });
  }
  const row = {
    name,
    rps: median(results.map((r) => r.rps)),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  };
  log(`${name}: ${Math.round(row.rps)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, errors ${row.errors}`);
  return row;
}

function table(rows, ceilingRps) {
  const header = '| scenario | req/s | × ceiling | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|---:|';
  return [
    header,
    ...rows.map(
      (row) =>
        `| ${row.name} | ${Math.round(row.rps)} | ${(row.rps / ceilingRps).toFixed(2)} | ${row.p50} | ${row.p99} | ${row.errors} |`,
    ),
  ].join('\n');
}

/** Creates a sandbox configuration without pacing or talk time and a published agent, through the API. */
async function seed(base, key) {
  const call = async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), 'x-api-key': key },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
    return json;
  };
  await call('POST', '/api/v1/telephony-configurations', {
    name: 'Bench sandbox',
    provider: 'sandbox',
    from_numbers: ['+15005550006'],
    calls_per_second: 1000,
    max_concurrent_calls: 10000,
    settings: { ring_ms: 0, talk_ms: 0, builtin_agent: false },
  });
  const workflow = await call('POST', '/api/v1/workflows', {
    name: 'Bench agent',
    definition: {
      nodes: [
        { id: 'trigger', type: 'trigger', data: {} },
        { id: 'start', type: 'startCall', data: { prompt: 'You call {{ initial_context.customer.name }}.', greeting: 'Hi {{ initial_context.customer.name }}!' } },
        { id: 'end', type: 'endCall', data: {} },
      ],
      edges: [
        { source: 'trigger', target: 'start' },
        { source: 'start', target: 'end' },
      ],
    },
  });
  await call('POST', `/api/v1/workflows/${workflow.id}/publish`);
  return { uuid: workflow.triggers[0].uuid, workflowId: workflow.id };
}

async function recentRunIds(base, key, workflowId, count) {
  const ids = [];
  let cursor = null;
  while (ids.length < count) {
    const query = `limit=200${cursor ? `&cursor=${cursor}` : ''}`;
    const response = await fetch(`${base}/api/v1/workflow/${workflowId}/runs?${query}`, { headers: { 'x-api-key': key } });
    const page = await response.json();
    ids.push(...page.runs.map((run) => run.id));
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return ids;
}

function realisticContext() {
  const context = {
    customer: { name: 'Ada Lovelace', id: 'cus_8f2a91', tier: 'gold', language: 'en-GB' },
    appointment: { at: '2026-12-01T09:30:00Z', clinic: 'North Street', doctor: 'Dr. Hopper', reason: 'annual check-up' },
    history: [],
  };
  while (JSON.stringify(context).length < 1000) context.history.push({ on: '2026-01-15', note: 'rescheduled by phone' });
  return context;
}

async function startCeiling() {
  const port = await freePort();
  const source = `
    const fastify = require('fastify')();
    fastify.get('/', async () => ({ status: 'ok', service: 'ceiling' }));
    fastify.listen({ port: ${port}, host: '127.0.0.1' });
  `;
  const child = start('ceiling', ['-e', source], process.env);
  const url = `http://127.0.0.1:${port}`;
  await waitUp(url);
  return { url, child };
}

function start(name, args, env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  children.push(child);
  return child;
}

async function waitUp(url) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not come up`);
}

function peakRssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
  return Math.round(kib / 1024);
}

function dropDatabase(url) {
  const name = new URL(url).pathname.slice(1);
  try {
    execFileSync('psql', [`${POSTGRES}/postgres`, '-qc', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`], { stdio: 'ignore' });
  } catch {
    log(`could not drop ${name}`);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function log(line) {
  process.stderr.write(`bench: ${line}\n`);
}
