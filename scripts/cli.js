#!/usr/bin/env node
'use strict';
// `npm run --silent cli -- <command>`: runs the compiled CLI, building the API
// first when the build is missing or older than its sources. Build output goes
// to stderr so that stdout carries only the command's result.
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const CLI_ENTRY = join(ROOT, 'dist/apps/api/apps/api/src/cli/main.js');
/** What `nest build api` compiles (see apps/api/tsconfig.app.json). */
const API_SOURCES = ['apps/api/src', 'libs', 'apps/api/tsconfig.app.json', 'tsconfig.json', 'nest-cli.json'];

function main() {
  if (isStale(CLI_ENTRY, API_SOURCES)) build('api');
  // Same process, same argv positions: the compiled main reads process.argv.slice(2).
  require(CLI_ENTRY);
}

/** True when `output` is missing or any source file (tests excluded) changed after it was written. */
function isStale(output, sources) {
  if (!existsSync(output)) return true;
  const builtAt = statSync(output).mtimeMs;
  return sources.some((source) => newestMtime(join(ROOT, source)) > builtAt);
}

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return /\.spec\.ts$/.test(path) ? 0 : stat.mtimeMs;
  return readdirSync(path).reduce((newest, entry) => Math.max(newest, newestMtime(join(path, entry))), 0);
}

function build(app) {
  const nest = join(ROOT, 'node_modules/.bin/nest');
  if (!existsSync(nest)) {
    process.stderr.write(`cli: the ${app} build is missing or stale and the Nest CLI is not installed (run npm ci)\n`);
    process.exit(1);
  }
  process.stderr.write(`cli: building ${app} (sources changed since the last build)...\n`);
  const result = spawnSync(nest, ['build', app], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) {
    process.stderr.write(`cli: "nest build ${app}" failed (exit ${result.status ?? result.signal}); fix the errors above\n`);
    process.exit(1);
  }
}

main();
