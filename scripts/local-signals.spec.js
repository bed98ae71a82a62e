'use strict';

const { REPEAT_SIGNAL_WINDOW_MS, probeHost, signalAction } = require('./local-signals');

describe('signalAction', () => {
  it('stops the apps on the first signal of any kind', () => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) expect(signalAction(signal, null, 5_000)).toBe('stop');
  });

  it('takes a repeat within the window as the same request', () => {
    for (const signal of ['SIGINT', 'SIGTERM']) expect(signalAction(signal, 5_000, 5_000 + REPEAT_SIGNAL_WINDOW_MS - 1)).toBe('ignore');
  });

  it('kills on a second Ctrl-C or SIGTERM past the window', () => {
    for (const signal of ['SIGINT', 'SIGTERM']) expect(signalAction(signal, 5_000, 5_000 + REPEAT_SIGNAL_WINDOW_MS + 1)).toBe('kill');
  });

  it('never kills on a closed terminal while the apps drain, however late it comes', () => {
    expect(signalAction('SIGHUP', 5_000, 5_000 + 30_000)).toBe('ignore');
  });
});

describe('probeHost', () => {
  it('probes the loopback for apps listening on every interface', () => {
    for (const host of [undefined, '', '0.0.0.0']) expect(probeHost(host)).toBe('127.0.0.1');
    expect(probeHost('::')).toBe('[::1]');
  });

  it('probes the one address the apps listen on, an IPv6 one in brackets', () => {
    expect(probeHost('192.168.1.20')).toBe('192.168.1.20');
    expect(probeHost('::1')).toBe('[::1]');
    expect(probeHost('localhost')).toBe('localhost');
  });
});
