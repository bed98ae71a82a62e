'use strict';
// What this machine charges a process for being woken. Two Node processes
// pass 1-byte messages back and forth over a Unix socket, first one message in
// flight at a time (every message wakes the other side: the latency
// scenario's low rates), then with more in flight (each wake-up carries many:
// a stream). Prints, per message, the wall time and the CPU each side used.
//
//   node scripts/bench/wakeups.js [messages]          as the OS places the two processes (20000 × in flight a round)
//   taskset -c 0 node scripts/bench/wakeups.js        both on one core
//
// The parent runs the rounds; the same file, started with `echo <socket>`,
// is the other side, which writes back whatever it reads.

const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const net = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { cpuSeconds } = require('./processes');
const { median } = require('./stats');

const IN_FLIGHT = [1, 16, 256];
const ROUNDS = 3;

if (process.argv[2] === 'echo') {
  const socket = net.connect(process.argv[3]);
  socket.setNoDelay(true);
  socket.on('data', (chunk) => socket.write(chunk));
  socket.on('close', () => process.exit(0));
} else {
  main(Number(process.argv[2] || 20000)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

async function main(messages) {
  const dir = mkdtempSync(join(tmpdir(), 'wakeups-'));
  const path = join(dir, 'socket');
  const server = net.createServer();
  await new Promise((resolve) => server.listen(path, resolve));
  const child = spawn(process.execPath, [__filename, 'echo', path], { stdio: 'inherit' });
  const [socket] = await new Promise((resolve) => server.once('connection', (...args) => resolve(args)));
  socket.setNoDelay(true);
  try {
    await exchange(socket, 1, Math.min(messages, 2000)); // warm-up
    console.log(`| in flight | wall µs per message | CPU µs per message: this side | the other side | both |`);
    console.log(`|---:|---:|---:|---:|---:|`);
    for (const inFlight of IN_FLIGHT) {
      const rounds = [];
      // As many more messages as there are in flight, so each round lasts long enough for /proc's 10 ms ticks.
      for (let round = 0; round < ROUNDS; round++) rounds.push(await measured(socket, child.pid, inFlight, messages * inFlight));
      const mid = (key) => median(rounds.map((r) => r[key]));
      console.log(`| ${inFlight} | ${fmt(mid('wall'))} | ${fmt(mid('self'))} | ${fmt(mid('other'))} | ${fmt(mid('self') + mid('other'))} |`);
    }
    console.log(`(medians of ${ROUNDS} rounds of ${messages} × in flight messages; CPU from /proc, 10 ms ticks)`);
  } finally {
    socket.destroy();
    server.close();
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measured(socket, otherPid, inFlight, messages) {
  const otherFrom = cpuSeconds(otherPid);
  const selfFrom = cpuSeconds(process.pid);
  const started = process.hrtime.bigint();
  await exchange(socket, inFlight, messages);
  const wallMicros = Number(process.hrtime.bigint() - started) / 1000;
  return {
    wall: wallMicros / messages,
    self: ((cpuSeconds(process.pid) - selfFrom) * 1e6) / messages,
    other: ((cpuSeconds(otherPid) - otherFrom) * 1e6) / messages,
  };
}

/** Sends `messages` bytes, keeping `inFlight` of them unanswered; resolves when all came back. */
function exchange(socket, inFlight, messages) {
  return new Promise((resolve) => {
    let sent = Math.min(inFlight, messages);
    let received = 0;
    const onData = (chunk) => {
      received += chunk.length;
      if (received >= messages) {
        socket.off('data', onData);
        resolve();
        return;
      }
      const more = Math.min(chunk.length, messages - sent);
      if (more > 0) {
        socket.write(Buffer.alloc(more, 1));
        sent += more;
      }
    };
    socket.on('data', onData);
    socket.write(Buffer.alloc(sent, 1));
  });
}

function fmt(value) {
  return value.toFixed(value < 1 ? 2 : value < 10 ? 1 : 0);
}
