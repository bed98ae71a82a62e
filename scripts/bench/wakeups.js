'use strict';
// What this machine charges a process for being woken. Two Node processes
// pass 1-byte messages back and forth over a Unix socket, first one message in
// flight at a time (every message wakes the other side: the latency
// scenario's low rates), then with more in flight (each wake-up carries many:
// a stream). Prints, per message, the wall time and the CPU each side used.
// With N in flight the first N bytes go out as one N-byte write, and each
// reply is written back as it arrives, so a wake-up reads whatever bytes have
// piled up: this measures a byte stream, not N separate writes.
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
  socket.on('data', (chunk) => socket.write(chunk));
  socket.on('close', () => process.exit(0));
} else {
  const messages = Number(process.argv[2] || 20000);
  if (!Number.isInteger(messages) || messages < 1) {
    console.error(`messages must be a whole number of at least 1, got ${process.argv[2]}`);
    process.exit(2);
  }
  main(messages).catch((error) => {
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
  let socket;
  try {
    socket = await connected(server, child);
    await exchange(socket, child, 1, Math.min(messages, 2000)); // warm-up
    console.log(`| in flight | wall µs per message | CPU µs per message: this side | the other side | both |`);
    console.log(`|---:|---:|---:|---:|---:|`);
    for (const inFlight of IN_FLIGHT) {
      const rounds = [];
      // As many more messages as there are in flight, so each round lasts long enough for /proc's 10 ms ticks.
      for (let round = 0; round < ROUNDS; round++) rounds.push(await measured(socket, child, inFlight, messages * inFlight));
      const mid = (key) => median(rounds.map((r) => r[key]));
      console.log(`| ${inFlight} | ${fmt(mid('wall'))} | ${fmt(mid('self'))} | ${fmt(mid('other'))} | ${fmt(mid('self') + mid('other'))} |`);
    }
    console.log(`(medians of ${ROUNDS} rounds of ${messages} × in flight messages; "both" is the sum of the two medians; CPU from /proc, 10 ms ticks)`);
  } finally {
    socket?.destroy();
    server.close();
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measured(socket, child, inFlight, messages) {
  const otherPid = child.pid;
  const otherFrom = cpuSeconds(otherPid);
  const selfFrom = cpuSeconds(process.pid);
  const started = process.hrtime.bigint();
  await exchange(socket, child, inFlight, messages);
  const wallMicros = Number(process.hrtime.bigint() - started) / 1000;
  return {
    wall: wallMicros / messages,
    self: ((cpuSeconds(process.pid) - selfFrom) * 1e6) / messages,
    other: ((cpuSeconds(otherPid) - otherFrom) * 1e6) / messages,
  };
}

/** The echo side's connection; rejects if the child exits before it connects. */
function connected(server, child) {
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`the echo process exited (${code}) before it connected`));
    child.once('exit', onExit);
    server.once('connection', (socket) => {
      child.off('exit', onExit);
      resolve(socket);
    });
  });
}

/**
 * Sends `messages` bytes, keeping `inFlight` of them unanswered; resolves when
 * all came back, rejects if the socket fails or closes or the echo process exits first.
 */
function exchange(socket, child, inFlight, messages) {
  return new Promise((resolve, reject) => {
    let sent = Math.min(inFlight, messages);
    let received = 0;
    const settle = (error) => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    const onError = (error) => settle(error);
    const onClose = () => settle(new Error(`the socket closed after ${received} of ${messages} bytes came back`));
    const onExit = (code) => settle(new Error(`the echo process exited (${code}) after ${received} of ${messages} bytes came back`));
    const onData = (chunk) => {
      received += chunk.length;
      if (received >= messages) {
        settle();
        return;
      }
      const more = Math.min(chunk.length, messages - sent);
      if (more > 0) {
        socket.write(Buffer.alloc(more, 1));
        sent += more;
      }
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    child.on('exit', onExit);
    socket.write(Buffer.alloc(sent, 1));
  });
}

function fmt(value) {
  return value.toFixed(value < 1 ? 2 : value < 10 ? 1 : 0);
}
