'use strict';

const { spawnSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { cpuSeconds } = require('./processes');

describe('cpuSeconds', () => {
  const ownCommand = readFileSync(`/proc/${process.pid}/comm`, 'utf8').trim();

  it('reads the CPU a live process has used', () => {
    // Burn a little CPU so the figure is more than a tick or two.
    const started = Date.now();
    while (Date.now() - started < 60);
    const seconds = cpuSeconds(process.pid);
    expect(seconds).toBeGreaterThan(0);
    expect(cpuSeconds(process.pid, ownCommand)).toBeGreaterThanOrEqual(seconds);
  });

  it('is NaN for a pid whose command is not the one expected', () => {
    expect(cpuSeconds(process.pid, 'redis-server')).toBeNaN();
  });

  it('is NaN for a process that has exited', () => {
    const { pid } = spawnSync(process.execPath, ['-e', '0']);
    expect(cpuSeconds(pid)).toBeNaN();
  });
});
