import { createServer, Server, Socket } from 'node:net';
import { failureOf } from '../../../test/support/failure-of';
import { freePort } from '../../../test/support/free-port';
import { CarrierError } from './carrier-error';
import { Agent, buildConnector, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { carrierHttp, neverConnectedDialError } from './carrier-http';
import { carrierNetworkFailure, isCarrierNetworkFailure } from './carrier-network-failure';

/** Keeps the event loop busy for `ms`: a timer due meanwhile then runs before any socket's news is read. */
function holdEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) continue;
}

/**
 * Node's AggregateError, errors and code, as one of Jest's realm. undici, loaded in Jest's sandbox, takes an error
 * of Node's realm for one only when its constructor is named Error, and of any other keeps just the name (a cause
 * `Error('AggregateError')`); outside Jest, Node's own is fetch's cause.
 */
function inJestRealm(error: Error): Error {
  const errors = (error as { errors?: unknown }).errors;
  if (!Array.isArray(errors)) return error;
  return Object.assign(new AggregateError(errors, error.message), { code: (error as { code?: unknown }).code });
}

/** Real requests on loopback: the errors are the ones fetch and `carrierHttp` raise, not shapes of them. */
describe('carrier network failures', () => {
  const servers: Array<{ server: Server; sockets: Set<Socket> }> = [];
  afterEach(async () => {
    for (const { server, sockets } of servers.splice(0)) {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  /** A carrier that takes the connection, then resets it when the request comes (or, `silent`, never answers). */
  async function carrier(behaviour: 'reset' | 'silent'): Promise<string> {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      if (behaviour === 'reset') socket.once('data', () => socket.resetAndDestroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push({ server, sockets });
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  const hangUp = (base: string, timeoutMs = 5_000) =>
    carrierHttp('Carrier', `${base}/calls/CA1/actions/hangup`, { method: 'POST', json: {}, timeoutMs });

  it.each([
    ['refused', async () => `http://127.0.0.1:${await freePort()}`, 'ECONNREFUSED'],
    ['reset', () => carrier('reset'), 'ECONNRESET'],
  ])('recognises a %s connection as carrierHttp throws it, and as carrierNetworkFailure classifies it', async (_, base, code) => {
    const failed = await failureOf(async () => hangUp(await base()));
    expect((failed as Error).message).toContain(code);
    expect(isCarrierNetworkFailure(failed)).toBe(true);
    expect(isCarrierNetworkFailure(carrierNetworkFailure('Telnyx POST /v2/calls/CA1/actions/hangup', failed))).toBe(true);
  });

  it('recognises a request the carrier never answered (a timeout)', async () => {
    const failed = await failureOf(async () => hangUp(await carrier('silent'), 50));
    const classified = carrierNetworkFailure('Vonage PUT /v1/calls/CA1', failed);
    expect(classified).not.toBeInstanceOf(CarrierError);
    expect(isCarrierNetworkFailure(failed)).toBe(true);
    expect(isCarrierNetworkFailure(classified)).toBe(true);
  });

  it('takes a carrier that never completes the connection (undici gives up connecting) for one that was never reached', async () => {
    // A connect timeout as undici's own (10 s), made short; the server takes the TCP connection and never answers
    // the TLS handshake, as an address that drops packets past a firewall leaves it.
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ connect: { timeout: 100 } }));
    try {
      const base = (await carrier('silent')).replace('http:', 'https:');
      const failed = await failureOf(async () => hangUp(base));
      expect(failed).toMatchObject({ reachedCarrier: false, message: expect.stringContaining('UND_ERR_CONNECT_TIMEOUT') });
      expect(carrierNetworkFailure('Vonage PUT /v1/calls/CA1', failed)).toMatchObject({
        reason: 'carrier_unreachable',
        notProcessed: true,
        carrierCode: 'UND_ERR_CONNECT_TIMEOUT',
      });
      expect(neverConnectedDialError(failed)).toMatchObject({ notProcessed: true });
    } finally {
      setGlobalDispatcher(previous);
    }
  });

  it("takes a connection tried on each of a host's addresses and made on none for one never reached (happy eyeballs)", async () => {
    // Node tries a host's addresses in turn (autoSelectFamily), each but the last for autoSelectFamilyAttemptTimeout.
    // The first here is given up so (ETIMEDOUT), as an IPv6 address whose packets are dropped is: the event loop is
    // held past that timeout, which then fires before the refusal is read. The last is refused (ECONNREFUSED).
    const port = await freePort();
    const lookup = (_host: string, _options: unknown, found: (error: null, addresses: Array<{ address: string; family: number }>) => void) => {
      found(null, [
        { address: '127.0.0.2', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ]);
      holdEventLoop(50);
    };
    const connect = buildConnector({ lookup, autoSelectFamily: true, autoSelectFamilyAttemptTimeout: 10 });
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(
      new Agent({ connect: (options, done) => connect(options, (error, socket) => (error === null ? done(null, socket) : done(inJestRealm(error), null))) }),
    );
    try {
      const failed = await failureOf(() => hangUp(`http://api.carrier.test:${port}`));
      // As undici throws it: the AggregateError's own code is the first address's only.
      const addresses = ((failed as Error).cause as Error).cause as { code: string; errors: Array<{ code: string }> };
      expect([addresses.code, addresses.errors.map((each) => each.code)]).toEqual(['ETIMEDOUT', ['ETIMEDOUT', 'ECONNREFUSED']]);
      expect(failed).toMatchObject({ reachedCarrier: false, message: expect.stringContaining('failed: ETIMEDOUT, ECONNREFUSED') });
      expect(carrierNetworkFailure('Telnyx POST /v2/calls', failed)).toMatchObject({ reason: 'carrier_unreachable', notProcessed: true });
      expect(neverConnectedDialError(failed)).toMatchObject({ notProcessed: true });
    } finally {
      setGlobalDispatcher(previous);
    }
  });

  it("names the request in its failure without the account its path holds (the message reaches the run's log)", async () => {
    const base = `http://127.0.0.1:${await freePort()}`;
    for (const [path, shown] of [
      ['/2010-04-01/Accounts/AC0123456789abcdef/Calls.json', '/2010-04-01/Accounts/…/Calls.json'],
      ['/v1/Account/MAXXXXXXXXXXXXXXXXXX/Call/', '/v1/Account/…/Call/'],
    ]) {
      const failed = (await failureOf(() => carrierHttp('Carrier', `${base}${path}?To=%2B1415`, { method: 'POST', timeoutMs: 1_000 }))) as Error;
      expect(failed.message).toBe(`Carrier request POST ${shown} failed: ECONNREFUSED`);
      expect(neverConnectedDialError(failed)!.message).not.toMatch(/AC0123456789abcdef|MAXXXXXXXXXXXXXXXXXX|To=/);
    }
  });

  it('keeps the refused connection a not-processed CarrierError, as dialing relies on', async () => {
    const failed = await failureOf(async () => hangUp(`http://127.0.0.1:${await freePort()}`));
    expect(carrierNetworkFailure('Telnyx POST /v2/calls', failed)).toMatchObject({
      reason: 'carrier_unreachable',
      notProcessed: true,
      permanent: false,
      carrierCode: 'ECONNREFUSED',
    });
  });

  it('does not take an answer the carrier gave, or an error of ours, for a network failure', () => {
    const refusal = new CarrierError('Telnyx could not hang up the call (401 10009)', {
      reason: 'carrier_unauthorized',
      permanent: true,
      notProcessed: true,
    });
    expect(isCarrierNetworkFailure(refusal)).toBe(false);
    expect(isCarrierNetworkFailure(new Error('wrapped', { cause: refusal }))).toBe(false);
    expect(isCarrierNetworkFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isCarrierNetworkFailure(null)).toBe(false);
  });
});
