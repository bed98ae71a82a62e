#!/usr/bin/env node
'use strict';
// `npm start` after the build: local Postgres and Redis up, a local secrets
// key, migrations, then the API and the dialer as two supervised processes,
// and on an empty database a demo agent with ready-to-paste curl commands.
// Plain Node on purpose: it runs before anything else is known to work.
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { existsSync, mkdirSync, writeFileSync } = require('node:fs');
const { connect } = require('node:net');
const { join, resolve } = require('node:path');
const { API_NODE_FLAGS, DIALER_NODE_FLAGS } = require('./app-node-flags');
const { forwardOutput } = require('./forward-output');
const { probeHost, signalAction } = require('./local-signals');

const ROOT = join(__dirname, '..');
const API_ENTRY = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
const DIALER_ENTRY = join(ROOT, 'dist/apps/dialer/apps/dialer/src/main.js');
const CONFIG_DEFAULTS = join(ROOT, 'dist/apps/api/libs/config/src/load-app-config.js');
const CLI = join(ROOT, 'scripts/cli.js');
const LOCAL_SECRETS_KEY_FILE = join(ROOT, 'var/local-secrets.key');
const READY_TIMEOUT_MS = 60_000;
/** How long past the dialer's own shutdown grace (SHUTDOWN_GRACE_MS) a stop may take before the apps are killed. */
const KILL_MARGIN_MS = 10_000;
/** SHUTDOWN_GRACE_MS + KILL_MARGIN_MS once the apps' environment is known. */
let killAfterMs = KILL_MARGIN_MS;

const apps = new Map(); // name -> ChildProcess of a long-running app
const helpers = new Set(); // short CLI runs (migrate, seed-demo)
let stopping = null; // { signal, at } once a shutdown started
let terminalGone = false; // after SIGHUP: nothing more is written to a terminal
let exitCode = 0;

main().catch((error) => {
  if (stopping) return; // a signal or a dead app already decided how this ends
  say(error instanceof StartError ? error.message : `failed: ${error && error.stack ? error.stack : error}`);
  exitCode = 1;
  stop('SIGTERM');
});

async function main() {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => onSignal(signal));
  // A closed pipe fails later writes with EPIPE: the stop that follows must not die of its own messages.
  for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  // Last resort if this process dies of a bug: do not leave the apps running.
  process.on('exit', () => {
    for (const child of [...apps.values(), ...helpers]) child.kill('SIGKILL');
  });

  for (const entry of [API_ENTRY, DIALER_ENTRY, CONFIG_DEFAULTS]) {
    if (!existsSync(entry)) throw new StartError(`${entry} is missing: build first (npm run build), or use npm start`);
  }
  const env = localEnvironment();
  await ensureLocalServices(env);

  await runCli(['migrate'], env);
  startApp('api', API_ENTRY, env, API_NODE_FLAGS);
  startApp('dialer', DIALER_ENTRY, env, DIALER_NODE_FLAGS);
  const host = probeHost(env.HOST);
  await Promise.all([
    waitUntilReady('api', `http://${host}:${env.PORT}/health/ready`),
    waitUntilReady('dialer', `http://${host}:${env.DIALER_HEALTH_PORT}/health/ready`),
  ]);

  const seed = JSON.parse(await runCli(['seed-demo'], env, { capture: true }));
  const baseUrl = (env.PUBLIC_BASE_URL || `http://localhost:${env.PORT}`).replace(/\/+$/, '');
  process.stdout.write(seed.seeded ? demoInstructions(seed, baseUrl) : existingDatabaseNote(baseUrl));
}

/** The apps' environment: what the caller set, plus local defaults and a persisted secrets key. */
function localEnvironment() {
  const { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, DEFAULT_SHUTDOWN_GRACE_MS } = require(CONFIG_DEFAULTS);
  const env = { ...process.env };
  env.DATABASE_URL = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  env.REDIS_URL = env.REDIS_URL || DEFAULT_REDIS_URL;
  env.PORT = env.PORT || '3000';
  env.DIALER_HEALTH_PORT = env.DIALER_HEALTH_PORT || String(Number(env.PORT) + 1);
  // The apps resolve relative paths against their cwd; pin it to the checkout.
  env.ARTIFACTS_DIR = resolve(ROOT, env.ARTIFACTS_DIR || 'var/artifacts');
  // A key of the operator's own, given as a file, is theirs: only with neither is one kept in var/. The apps read it
  // from there as from any SECRETS_KEY_FILE, so a damaged file is named in their complaint.
  if (!env.SECRETS_KEY && !env.SECRETS_KEY_FILE) env.SECRETS_KEY_FILE = localSecretsKeyFile();
  env.SHUTDOWN_GRACE_MS = env.SHUTDOWN_GRACE_MS || String(DEFAULT_SHUTDOWN_GRACE_MS);
  killAfterMs = (Number(env.SHUTDOWN_GRACE_MS) || DEFAULT_SHUTDOWN_GRACE_MS) + KILL_MARGIN_MS;
  return env;
}

/** var/local-secrets.key (mode 0600), made once, so encrypted data and issued links survive restarts. */
function localSecretsKeyFile() {
  if (existsSync(LOCAL_SECRETS_KEY_FILE)) return LOCAL_SECRETS_KEY_FILE;
  mkdirSync(join(ROOT, 'var'), { recursive: true });
  try {
    writeFileSync(LOCAL_SECRETS_KEY_FILE, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx', flush: true });
    say('SECRETS_KEY is not set: generated one in var/local-secrets.key (set SECRETS_KEY to use your own)');
  } catch (error) {
    // Another `npm start` made it meanwhile: that key is the one.
    if (error.code !== 'EEXIST') throw error;
  }
  return LOCAL_SECRETS_KEY_FILE;
}

/** Starts the machine's own Postgres and Redis when the URLs point here and nothing answers. */
async function ensureLocalServices(env) {
  // A URL that does not parse is not looked at here: the apps' own check names it (`DATABASE_URL must be a URL`).
  const targets = [
    { name: 'Postgres', url: URL.parse(env.DATABASE_URL), defaultPort: 5432 },
    { name: 'Redis', url: URL.parse(env.REDIS_URL), defaultPort: 6379 },
  ].filter((target) => target.url && ['localhost', '127.0.0.1', '[::1]'].includes(target.url.hostname));
  const down = [];
  for (const target of targets) {
    if (!(await answers(target.url.hostname.replace(/^\[|\]$/g, ''), Number(target.url.port || target.defaultPort)))) {
      down.push(target.name);
    }
  }
  if (down.length === 0) return;
  say(`${down.join(' and ')} did not answer: running scripts/ensure-services.sh`);
  const code = await waitForExit(spawn('bash', [join(ROOT, 'scripts/ensure-services.sh')], { cwd: ROOT, stdio: ['ignore', 2, 2] }));
  if (code !== 0) throw new StartError(`scripts/ensure-services.sh failed; start ${down.join(' and ')} yourself, or use docker compose up`);
}

function answers(host, port) {
  return new Promise((done) => {
    const socket = connect({ host, port, timeout: 1000 });
    const finish = (up) => {
      socket.destroy();
      done(up);
    };
    socket.once('connect', () => finish(true));
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

/** Runs one CLI command; its messages go to stderr, its stdout is returned when captured. */
async function runCli(args, env, { capture = false } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', capture ? 'pipe' : 2, 2],
    detached: true, // signals reach it through onSignal only, once
  });
  helpers.add(child);
  let stdout = '';
  if (capture) child.stdout.on('data', (chunk) => (stdout += chunk));
  const code = await waitForExit(child);
  helpers.delete(child);
  exitWhenAllStopped();
  if (stopping) throw new StartError('stopped');
  if (code !== 0) throw new StartError(`"npm run cli -- ${args.join(' ')}" failed (exit ${code}); see above`);
  return stdout;
}

function startApp(name, entry, env, nodeFlags) {
  // Own process group: a terminal Ctrl-C reaches the app once, forwarded by
  // onSignal, instead of twice (twice makes Nest skip its graceful shutdown).
  // Its output comes through this process rather than to the terminal itself,
  // so a terminal closed under it cannot fail the app's own writes.
  const child = spawn(process.execPath, [...nodeFlags, entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // Always read, so an app never waits on its output; past a bound waiting for a slow reader, lines are dropped.
  const dropped = (target) => terminalGone && target.isTTY;
  for (const [source, target, what] of [[child.stdout, process.stdout, 'stdout'], [child.stderr, process.stderr, 'stderr']]) {
    const onDropped = (bytes) => say(`${bytes} bytes of the ${name}'s ${what} dropped: this output was read too slowly`);
    forwardOutput(source, target, { dropped, onDropped });
  }
  apps.set(name, child);
  say(`${name} started (pid ${child.pid})`);
  // 'close', not 'exit': by then its pipes are drained, so its last lines (a "stopped", a failure's stack) are through.
  child.once('close', (code, signal) => {
    apps.delete(name);
    const clean = code === 0 || (stopping !== null && signal === stopping.signal);
    if (!stopping) {
      say(`${name} exited unexpectedly (${signal ? `signal ${signal}` : `exit code ${code}`}): stopping the others`);
      exitCode = 1;
      stop('SIGTERM');
    } else if (!clean) {
      say(`${name} did not stop cleanly (${signal ? `signal ${signal}` : `exit code ${code}`})`);
      exitCode = 1;
    } else {
      say(`${name} stopped`);
    }
    exitWhenAllStopped();
  });
}

async function waitUntilReady(name, url) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!stopping) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new StartError(`${name} was not ready after ${READY_TIMEOUT_MS / 1000} s (${url})`);
    await new Promise((done) => setTimeout(done, 250));
  }
  throw new StartError('stopped');
}

function onSignal(signal) {
  // The terminal is gone: writing to it would fail (and can crash Node), so nothing more is written to it, the apps'
  // logs included; they are still read, so the apps never block on a full pipe while they drain.
  if (signal === 'SIGHUP') terminalGone = true;
  const action = signalAction(signal, stopping ? stopping.at : null);
  if (action === 'stop') {
    say(`${signal}: stopping the api and the dialer`);
    stop(signal);
  } else if (action === 'kill') {
    killAll(`${signal} again`);
  }
}

function killAll(reason) {
  if (apps.size + helpers.size === 0) return;
  say(`${reason}: killing what still runs`);
  for (const child of [...apps.values(), ...helpers]) child.kill('SIGKILL');
}

function stop(received) {
  // The apps drain on SIGTERM and SIGINT only: a closed terminal's SIGHUP would kill them mid-dial.
  const signal = received === 'SIGHUP' ? 'SIGTERM' : received;
  if (!stopping) {
    stopping = { signal, at: Date.now() };
    setTimeout(() => killAll('did not stop in time'), killAfterMs).unref();
  }
  for (const child of [...apps.values(), ...helpers]) child.kill(signal);
  exitWhenAllStopped();
}

function exitWhenAllStopped() {
  if (!(stopping && apps.size === 0 && helpers.size === 0)) return;
  // What the apps wrote last may still be on its way out of this process (a pipe is written asynchronously): exit once
  // both streams have taken it, or after a second if one never does (a terminal that went away).
  process.exitCode = exitCode;
  let pending = 2;
  const flushed = () => --pending === 0 && process.exit(exitCode);
  for (const stream of [process.stdout, process.stderr]) {
    if (terminalGone && stream.isTTY) flushed();
    else stream.write('', flushed);
  }
  setTimeout(() => process.exit(exitCode), 1_000).unref();
}

/** The child's exit code once its output is read to the end too ('exit' may come before the last of it). */
function waitForExit(child) {
  return new Promise((done) => {
    child.once('error', () => done(127));
    child.once('close', (code, signal) => done(signal ? 128 : code));
  });
}

function demoInstructions(seed, baseUrl) {
  const key = seed.api_key;
  const runUrl = `${baseUrl}/api/v1/workflow/${seed.workflow_id}/runs/$RUN_ID`;
  const body = JSON.stringify({ phone_number: '+14155550123', initial_context: { customer: { name: 'Ada' } } });
  const field = (name) => `node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).${name}'`;
  return [
    '',
    '# ---------------------------------------------------------------------------',
    `# Demo ready. API ${baseUrl}, OpenAPI docs ${baseUrl}/docs`,
    `# Demo organization ${seed.organization_id}, admin API key (shown only now, keep it): ${key}`,
    '#',
    '# 1. Trigger a sandbox call; it answers {"status": "initiated", "workflow_run_id": ...}:',
    `curl -sS -X POST '${baseUrl}/api/v1/public/agent/${seed.trigger_uuid}' -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' -d '${body}'`,
    '# 2. Read the run: RUN_ID is the workflow_run_id answered above (the first call is 1);',
    '#    "is_completed" turns true about 5 s after the trigger.',
    'RUN_ID=1',
    `curl -sS "${runUrl}" -H 'X-API-Key: ${key}'`,
    '# 3. Download the recording: the run\'s recording_url needs no key and expires after an hour.',
    '#    (The transcript likewise: transcript_url.)',
    `curl -sS -o recording.wav "$(curl -sS "${runUrl}" -H 'X-API-Key: ${key}' | ${field('recording_url')})"`,
    '# ---------------------------------------------------------------------------',
    '',
  ].join('\n');
}

function existingDatabaseNote(baseUrl) {
  return [
    '',
    `# Running. The database already has organizations, so no demo was seeded.`,
    `# API ${baseUrl}, OpenAPI docs ${baseUrl}/docs`,
    '# A new organization and admin key: npm run --silent cli -- bootstrap --org "My org" --json',
    '',
  ].join('\n');
}

function say(message) {
  write(process.stderr, `start-local: ${message}\n`);
}

/** Writes to this process's output, unless it is the terminal that went away (SIGHUP); a file or a pipe still gets it. */
function write(stream, chunk) {
  if (!(terminalGone && stream.isTTY)) stream.write(chunk);
}

class StartError extends Error {}
