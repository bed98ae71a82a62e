'use strict';

/** npm and the terminal both deliver one Ctrl-C: a repeat this soon is the same request. */
const REPEAT_SIGNAL_WINDOW_MS = 1_000;

/**
 * What `npm start` does with a signal: `stop` the apps (they drain), do
 * nothing more (`ignore`), or `kill` them. Only a second SIGINT or SIGTERM,
 * past REPEAT_SIGNAL_WINDOW_MS, kills: a terminal closed while the apps drain
 * (SIGHUP) asks for nothing more than the stop under way, and killing them
 * then would cut off their dials in flight.
 */
function signalAction(signal, stoppingSince, now = Date.now()) {
  if (stoppingSince === null) return 'stop';
  if (signal === 'SIGHUP' || now - stoppingSince < REPEAT_SIGNAL_WINDOW_MS) return 'ignore';
  return 'kill';
}

/**
 * Where apps listening on HOST answer this machine's readiness probes: the
 * loopback for every interface (unset, 0.0.0.0, ::), else that address, an
 * IPv6 one in brackets as a URL needs it.
 */
function probeHost(host) {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

module.exports = { REPEAT_SIGNAL_WINDOW_MS, signalAction, probeHost };
