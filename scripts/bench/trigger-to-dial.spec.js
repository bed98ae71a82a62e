'use strict';

const { withTogether } = require('./trigger-to-dial');

describe('withTogether', () => {
  it('adds up the CPU of every process', () => {
    expect(withTogether({ API: 0.5, dialer: 1, Postgres: 0.25, Redis: 0.25 }).together).toBeCloseTo(2);
  });

  it('leaves Redis out when it runs on another machine', () => {
    const figures = withTogether({ API: 0.5, dialer: 1, Postgres: 0.25, Redis: NaN });
    expect(figures.together).toBeCloseTo(1.75);
    expect(figures.Redis).toBeNaN();
  });

  it('has no sum when a process the bench starts or reads was not measured', () => {
    expect(withTogether({ API: 0.5, dialer: NaN, Postgres: 0.25, Redis: 0.25 }).together).toBeNaN();
    expect(withTogether({ API: 0.5, dialer: 1, Postgres: NaN, Redis: 0.25 }).together).toBeNaN();
  });
});
