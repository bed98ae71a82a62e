'use strict';

const { ceilingByRateTable, latencyCpuTable } = require('./report');

const lines = (table) => table.split('\n');
const cells = (line) => line.split('|').slice(1, -1).map((text) => text.trim());

describe('ceilingByRateTable', () => {
  it('sets the CPU per request at each fixed rate against the full-speed rounds', () => {
    const table = ceilingByRateTable(
      [
        { rate: 250, seconds: 10, answeredPerSecond: 249.6, cpuMicros: 432 },
        { rate: 1000, seconds: 10, answeredPerSecond: 1000, cpuMicros: 132 },
      ],
      { rps: 15204, cpuMicros: 72 },
    );
    const [, , lone, steady, full] = lines(table);
    expect(cells(lone)).toEqual(['fixed rate, 10 s', '250', '250', '432', '6.0']);
    expect(cells(steady)).toEqual(['fixed rate, 10 s', '1000', '1000', '132', '1.8']);
    expect(cells(full)).toEqual(["full speed (the ceiling's rounds, median)", '–', '15204', '72', '1.0']);
  });

  it('shows a dash, not a ratio, where a figure is missing', () => {
    const table = ceilingByRateTable([{ rate: 250, seconds: 5, answeredPerSecond: 0, cpuMicros: NaN }], { rps: 15000, cpuMicros: 70 });
    expect(cells(lines(table)[2])).toEqual(['fixed rate, 5 s', '250', '0', '–', '–']);
  });
});

describe('latencyCpuTable', () => {
  const parts = ['API', 'dialer', 'Postgres', 'Redis'];

  it('gives each process its CPU per trigger and their sum', () => {
    const table = latencyCpuTable(
      [{ seconds: 15, rate: 1000, cpuMs: { API: 0.59, dialer: 1.07, Postgres: 0.52, Redis: 0.69, together: 2.87 }, machinePercent: 190.4 }],
      parts,
    );
    const [header, , row] = lines(table);
    expect(cells(header).slice(2, 7)).toEqual([...parts, 'together']);
    expect(cells(row)).toEqual(['15 s per round', '1000', '0.59', '1.07', '0.52', '0.69', '2.87', '190']);
  });

  it('sets the CPU per second with no triggers above the rates', () => {
    const idle = { seconds: 5, msPerSecond: { API: 1.25, dialer: 8, Postgres: 0.5, Redis: 2, together: 11.75 }, machinePercent: 4.2 };
    const table = latencyCpuTable(
      [{ seconds: 15, rate: 50, cpuMs: { API: 2.63, dialer: 5.99, Postgres: 2.75, Redis: 1.51, together: 12.88 }, machinePercent: 72 }],
      parts,
      idle,
    );
    const [, , idleRow, row] = lines(table);
    expect(cells(idleRow)).toEqual(['idle: CPU ms per second, no triggers, 5 s', '0', '1.25', '8.00', '0.50', '2.00', '11.75', '4']);
    expect(cells(row)[1]).toBe('50');
  });

  it('shows a dash for a figure that is missing, the sum included', () => {
    const table = latencyCpuTable([{ seconds: 15, rate: 250, cpuMs: { API: 2, dialer: NaN, Postgres: 1.5, Redis: NaN, together: NaN }, machinePercent: 150 }], parts);
    expect(cells(lines(table)[2]).slice(2, 7)).toEqual(['2.00', '–', '1.50', '–', '–']);
  });
});
