#!/usr/bin/env node
/*
 * npm run bench:artifacts: the CPU a stored artifact costs this process, for
 * the storage the apps use (LocalArtifactStorage: artifacts appended to pack
 * files, a batch at a time, each batch flushed with fdatasync), the same
 * without the flush, and the ways it wrote before, kept here as references:
 * a file each, created and renamed into place in turn with synchronous calls
 * (as its writer thread did, here on the main thread), and a file each
 * through the event loop (fs.writeFile, then fs.promises.rename, each a trip
 * to libuv's thread pool). All write transcript-sized artifacts into the same
 * folder, in alternating rounds, BENCH_ARTIFACT_CONCURRENCY writes in flight,
 * as a busy dialer does; the table gives the medians of the rounds. CPU is the
 * whole process (main and pool threads, kernel time included), from
 * process.cpuUsage().
 *
 * Knobs: BENCH_ROUNDS (8), BENCH_ARTIFACT_FILES (artifacts per round, 4000),
 * BENCH_ARTIFACT_CONCURRENCY (100), BENCH_ARTIFACT_DIR (a folder to write in;
 * default a new one under the system's temporary folder, removed afterwards).
 */
'use strict';

const { mkdirSync, mkdtempSync, renameSync, rmSync, writeFile, writeFileSync } = require('node:fs');
const { mkdir, rename } = require('node:fs/promises');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const { promisify } = require('node:util');
const { median } = require('./bench/stats');

const BUILT = join(__dirname, '..', 'dist', 'apps', 'dialer', 'libs', 'artifacts', 'src');
const env = process.env;
const rounds = Number(env.BENCH_ROUNDS || 8);
const files = Number(env.BENCH_ARTIFACT_FILES || 4000);
const concurrency = Number(env.BENCH_ARTIFACT_CONCURRENCY || 100);

/** A file each, written whole to a temporary name and renamed, with synchronous calls one after the other. */
class FileEach {
  constructor(root) {
    this.root = root;
    this.writes = 0;
  }

  async put(key, body) {
    const path = join(this.root, 'files', key);
    const temporary = `${path}.${process.pid}.${++this.writes}.tmp`;
    try {
      writeFileSync(temporary, body);
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
      mkdirSync(dirname(temporary), { recursive: true });
      writeFileSync(temporary, body);
    }
    renameSync(temporary, path);
    return key;
  }
}

/** A file each through the event loop and libuv's thread pool. */
class PoolWrites {
  constructor(root) {
    this.root = root;
    this.known = new Set();
    this.writes = 0;
    this.writeFile = promisify(writeFile);
  }

  async put(key, body) {
    const path = join(this.root, 'pool', key);
    const temporary = `${path}.${process.pid}.${++this.writes}.tmp`;
    const directory = dirname(path);
    if (!this.known.has(directory)) {
      await mkdir(directory, { recursive: true });
      this.known.add(directory);
    }
    await this.writeFile(temporary, body);
    await rename(temporary, path);
    return key;
  }
}

async function main() {
  let built;
  try {
    built = { ...require(join(BUILT, 'local-artifact-storage.js')), ...require(join(BUILT, 'artifact-storage.js')) };
  } catch {
    process.stderr.write('bench:artifacts: build the apps first (npm run build)\n');
    process.exit(1);
  }
  const root = env.BENCH_ARTIFACT_DIR ? mkdtempSync(join(env.BENCH_ARTIFACT_DIR, 'va-artifacts-')) : mkdtempSync(join(tmpdir(), 'va-artifacts-'));
  const packed = new built.LocalArtifactStorage(join(root, 'synced'));
  const unsynced = new built.LocalArtifactStorage(join(root, 'unsynced'), { packBytes: 64 * 1024 * 1024, sync: false });
  const ways = {
    'packs, a batch flushed with fdatasync (LocalArtifactStorage)': packed,
    'packs, not flushed': unsynced,
    'a file each, in turn (the writer thread, before)': new FileEach(root),
    'a file each, through the thread pool (before that)': new PoolWrites(root),
  };
  const results = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
  let nextRun = 0;
  try {
    // One round of each first, not counted: packs open, folders and caches warm up.
    for (let round = -1; round < rounds; round++) {
      const order = round % 2 === 0 ? Object.keys(ways) : Object.keys(ways).reverse();
      for (const name of order) {
        const figures = await oneRound(ways[name], built.artifactKey, nextRun);
        nextRun += files;
        if (round >= 0) results[name].push(figures);
        process.stderr.write(`bench:artifacts: round ${round + 1} ${name}: ${format(figures)}\n`);
      }
    }
  } finally {
    await packed.onApplicationShutdown();
    await unsynced.onApplicationShutdown();
    rmSync(root, { recursive: true, force: true });
  }
  console.log(`| artifact writes (${files} artifacts a round, ${concurrency} in flight, medians of ${rounds} rounds) | CPU µs per artifact | of which user | of which kernel | artifacts/s |`);
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, list] of Object.entries(results)) {
    const pick = (field) => Math.round(median(list.map((figures) => figures[field])));
    console.log(`| ${name} | ${pick('cpu')} | ${pick('user')} | ${pick('system')} | ${pick('perSecond')} |`);
  }
}

async function oneRound(storage, artifactKey, firstRun) {
  const body = (run) => Buffer.from(JSON.stringify({ run_id: run, turns: [{ speaker: 'agent', text: 'Hello there!' }] }, null, 2));
  const cpuFrom = process.cpuUsage();
  const startedAt = process.hrtime.bigint();
  let next = 0;
  const worker = async () => {
    while (next < files) {
      const run = firstRun + next++;
      await storage.put(artifactKey(run, 'transcript', 'json'), body(run));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
  const cpu = process.cpuUsage(cpuFrom);
  return { cpu: (cpu.user + cpu.system) / files, user: cpu.user / files, system: cpu.system / files, perSecond: files / seconds };
}

function format(figures) {
  return `${figures.cpu.toFixed(0)} µs CPU per artifact (user ${figures.user.toFixed(0)}, kernel ${figures.system.toFixed(0)}), ${figures.perSecond.toFixed(0)} artifacts/s`;
}

main().catch((error) => {
  process.stderr.write(`bench:artifacts failed: ${error.stack || error}\n`);
  process.exitCode = 1;
});
