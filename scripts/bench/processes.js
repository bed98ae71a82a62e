'use strict';
// Child processes of the bench: started with their stderr prefixed, tracked so
// that none outlives the bench (even on Ctrl-C or a crash), and measured.

const { spawn } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { cpus } = require('node:os');
const { createServer } = require('node:net');

const live = new Set();

/** Node flags for the apps (BENCH_NODE_FLAGS, space-separated), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them. */
const nodeFlags = (process.env.BENCH_NODE_FLAGS || '').split(' ').filter(Boolean);

/**
 * Starts `node appFlags... args...` (BENCH_NODE_FLAGS between the two, so they
 * can override the app's own flags); its stderr is passed through, prefixed with `name`.
 */
function startNode(name, args, env, cwd, appFlags = []) {
  const child = spawn(process.execPath, [...appFlags, ...nodeFlags, ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  live.add(child);
  void child.exited.then(() => live.delete(child));
  return child;
}

/** SIGTERM (graceful: in-flight jobs finish), SIGKILL after `graceMs`. */
async function stopChild(child, graceMs = 20000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

function killAll() {
  for (const child of live) child.kill('SIGKILL');
}

/** Stops every live child gracefully (so `--cpu-prof` profiles get written), SIGKILL after `graceMs`. */
async function stopAll(graceMs = 5000) {
  await Promise.all([...live].map((child) => stopChild(child, graceMs)));
}

/** Memory of a live process from /proc, in MiB: `VmHWM` is its peak resident set, `VmRSS` the current one. */
function memoryMiB(pid, field) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)[1]) / 1024;
  } catch {
    return NaN;
  }
}

/**
 * CPU time (user + system) a live process has used, in seconds; assumes the
 * usual 100 clock ticks per second. With `command`, NaN unless the process's
 * command name is that one: a pid learnt from a server (Redis' INFO, Postgres'
 * pg_stat_activity) names a process of this machine only when the server runs here.
 */
function cpuSeconds(pid, command) {
  try {
    // The command name sits in parentheses and may hold spaces; of the fields after it, utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    if (command !== undefined && stat.slice(stat.indexOf('(') + 1, close) !== command) return NaN;
    const fields = stat.slice(close + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** The machine's CPU counters (all cores), for busyPercent. */
function machineCpu() {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = ticks[3] + ticks[4];
  return { idle, total: ticks.slice(0, 8).reduce((sum, t) => sum + t, 0) };
}

/** How busy the machine was between two machineCpu() readings, in % of one core (like a process's CPU %). */
function busyPercent(from, to) {
  const total = to.total - from.total;
  return total > 0 ? (1 - (to.idle - from.idle) / total) * 100 * cpus().length : NaN;
}

async function waitUp(url, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not come up within ${timeoutMs / 1000} s`);
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

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

module.exports = { startNode, stopChild, stopAll, killAll, memoryMiB, cpuSeconds, machineCpu, busyPercent, waitUp, freePort, sleep };
