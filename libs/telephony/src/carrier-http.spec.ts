import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Network, parseNetwork } from '@app/config';
import { CarrierError } from './carrier-error';
import {
  allowCarrierStorageNetworks,
  carrierHostCheck,
  carrierHttp,
  CarrierRequestFailed,
  DownloadRefused,
  isPublicHttpsUrl,
  MAX_CARRIER_API_BODY_BYTES,
  MAX_RECORDING_BYTES,
  MAX_REDIRECTS,
  neverConnectedDialError,
  retryAfterMs,
} from './carrier-http';
import { carrierNetworkFailure } from './carrier-network-failure';

interface Hop {
  url: string;
  authorization: string | undefined;
}

/** A server on 127.0.0.1 (`base` names it by address, `named` as localhost) that answers with `answer(path)` and records each request it gets. */
async function server(
  answer: (path: string) => { status: number; location?: string; body?: string },
): Promise<{ base: string; named: string; hops: Hop[]; close: () => Promise<void> }> {
  const hops: Hop[] = [];
  const listening: Server = createServer((request, response) => {
    hops.push({ url: request.url!, authorization: request.headers.authorization });
    const { status, location, body } = answer(request.url!);
    response.writeHead(status, location ? { location } : { 'content-type': 'audio/wav' }).end(body ?? '');
  });
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  const port = (listening.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    named: `http://localhost:${port}`,
    hops,
    close: () => new Promise<void>((resolve) => listening.close(() => resolve())),
  };
}

/** CIDRs as the configuration reads them. */
const networks = (...cidrs: string[]): Network[] => cidrs.map((cidr) => parseNetwork(cidr)!);

const download = (url: string, followRedirect?: (target: URL) => boolean, trustedOrigins?: string[]) =>
  carrierHttp('Carrier', url, { method: 'GET', authorization: 'Basic c2VjcmV0', timeoutMs: 5_000, followRedirect, trustedOrigins });

describe('carrierHttp redirects', () => {
  const open: Array<{ close: () => Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((each) => each.close()));
  });
  const started = async (answer: Parameters<typeof server>[0]) => {
    const each = await server(answer);
    open.push(each);
    return each;
  };

  it('answers a redirect as it is when the request follows none (API calls)', async () => {
    const carrier = await started(() => ({ status: 302, location: '/elsewhere' }));

    const response = await download(`${carrier.base}/api`);

    expect(response.status).toBe(302);
    expect(carrier.hops.map((hop) => hop.url)).toEqual(['/api']);
  });

  it('follows the redirects it is allowed, keeping the Authorization header on the first origin only', async () => {
    const storage = await started(() => ({ status: 200, body: 'RIFF' }));
    const carrier = await started((path) => (path === '/file' ? { status: 302, location: '/moved' } : { status: 307, location: `${storage.base}/signed` }));

    const response = await download(`${carrier.base}/file`, () => true, [carrier.base, storage.base]);

    expect(response).toMatchObject({ status: 200, bytes: Buffer.from('RIFF') });
    expect(carrier.hops).toEqual([
      { url: '/file', authorization: 'Basic c2VjcmV0' },
      { url: '/moved', authorization: 'Basic c2VjcmV0' },
    ]);
    expect(storage.hops).toEqual([{ url: '/signed', authorization: undefined }]);
  });

  it('refuses a redirect its check refuses, before connecting to it', async () => {
    const internal = await started(() => ({ status: 200, body: 'secret' }));
    const carrier = await started(() => ({ status: 302, location: `${internal.base}/latest/meta-data/` }));

    await expect(download(`${carrier.base}/file`, (target) => target.origin === carrier.base, [carrier.base])).rejects.toThrow(
      new DownloadRefused(`refused to follow a redirect to ${internal.base}`),
    );
    expect(internal.hops).toEqual([]);
  });

  it(`gives up after ${MAX_REDIRECTS} redirects`, async () => {
    const carrier = await started((path) => ({ status: 302, location: `/hop${Number(path.replace('/hop', '')) + 1}` }));

    await expect(download(`${carrier.base}/hop0`, () => true, [carrier.base])).rejects.toThrow(`redirected more than ${MAX_REDIRECTS} times`);
    expect(carrier.hops).toHaveLength(MAX_REDIRECTS + 1);
  });

  describe('connections of a download to a host not trusted by configuration', () => {
    it('refuses a name that resolves to a loopback address, before connecting, without telling the address', async () => {
      const storage = await started(() => ({ status: 200, body: 'RIFF' }));
      const host = new URL(storage.named).hostname;

      const refused = download(`${storage.named}/x.wav`, () => true, ['https://api.carrier.example']);

      await expect(refused).rejects.toMatchObject({ name: 'DownloadRefused', message: `refused to connect to ${host}: it does not resolve to a public address` });
      expect(storage.hops).toEqual([]);
    });

    it('refuses a redirect from the trusted API to such a name, and to a private address literal', async () => {
      const internal = await started(() => ({ status: 200, body: 'secret' }));
      const carrier = await started((path) => ({ status: 302, location: path === '/named' ? `${internal.named}/latest/` : `${internal.base}/latest/` }));

      await expect(download(`${carrier.base}/named`, () => true, [carrier.base])).rejects.toThrow(DownloadRefused);
      await expect(download(`${carrier.base}/literal`, () => true, [carrier.base])).rejects.toMatchObject({
        name: 'DownloadRefused',
        message: `refused to connect to ${new URL(internal.base).hostname}: it does not resolve to a public address`,
      });
      expect(carrier.hops.map((hop) => hop.url)).toEqual(['/named', '/literal']);
      expect(internal.hops).toEqual([]);
    });

    it('connects to the private networks the operator names for carrier storage (CARRIER_STORAGE_NETWORKS), and only to those', async () => {
      const storage = await started(() => ({ status: 200, body: 'RIFF' }));
      try {
        allowCarrierStorageNetworks(networks('10.0.0.0/8'));
        await expect(download(`${storage.named}/x.wav`, () => true, [])).rejects.toMatchObject({ name: 'DownloadRefused' });
        // localhost resolves to 127.0.0.1 and, where the machine has it, ::1: both must be named.
        allowCarrierStorageNetworks(networks('127.0.0.0/8', '::1/128'));
        expect(await download(`${storage.named}/x.wav`, () => true, [])).toMatchObject({ status: 200, bytes: Buffer.from('RIFF') });
        expect(await download(`${storage.base}/x.wav`, () => true, [])).toMatchObject({ status: 200 });
      } finally {
        allowCarrierStorageNetworks([]);
      }
      await expect(download(`${storage.base}/x.wav`, () => true, [])).rejects.toMatchObject({ name: 'DownloadRefused' });
    });

    it('connects to a trusted origin wherever it points (the configured API, a local fake in tests)', async () => {
      const storage = await started(() => ({ status: 200, body: 'RIFF' }));

      const response = await download(`${storage.named}/x.wav`, () => true, [storage.named]);

      expect(response).toMatchObject({ status: 200, bytes: Buffer.from('RIFF') });
    });
  });
});

describe('carrierHttp answers past the size it reads', () => {
  let listening: Server;
  let base: string;
  beforeAll(async () => {
    listening = createServer((request, response) => {
      if (request.url === '/recording.wav') {
        // Declares a file past the limit (a recording of a call of hours) and sends a little of it.
        response.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(MAX_RECORDING_BYTES + 1) });
        response.write(Buffer.alloc(1024));
      } else if (request.url === '/long-call.wav') {
        response.writeHead(200, { 'content-type': 'audio/wav' }).end(Buffer.alloc(2 * MAX_CARRIER_API_BODY_BYTES));
      } else {
        // An API answer a byte past its limit, streamed without a length (a proxy's page, say, where a dial's answer was due).
        response.writeHead(201, { 'content-type': 'application/json' });
        response.write(Buffer.alloc(MAX_CARRIER_API_BODY_BYTES, ' '));
        response.end('{}');
      }
    });
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    listening.closeAllConnections();
    await new Promise<void>((resolve) => listening.close(() => resolve()));
  });

  it('refuses a download past it for good, as a download it would not make: it is as long the next time', async () => {
    // The carrier's own (configured) origin, as a test's fake carrier is.
    const refused = await download(`${base}/recording.wav`, () => false, [base]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DownloadRefused);
    expect((refused as Error).message).toBe('the file is over the 100 MiB a recording may be');
  });

  it('reads a recording past the limit of an API answer whole', async () => {
    const response = await download(`${base}/long-call.wav`, () => false, [base]);
    expect(response.bytes).toHaveLength(2 * MAX_CARRIER_API_BODY_BYTES);
  });

  it("reads an API answer up to 1 MiB, and takes one past it for a request the carrier got: a dial's outcome unknown", async () => {
    const dial = carrierHttp('Carrier', `${base}/v2/calls`, { method: 'POST', json: { to: '+14155550123' }, timeoutMs: 5_000 });
    const failed = await dial.catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(CarrierRequestFailed);
    expect(failed).toMatchObject({ reachedCarrier: true, message: expect.stringMatching(/over the 1048576-byte limit/) });
    // Neither a rejection (ended) nor a dial never sent (dialed again): not a CarrierError, so the dialer asks the carrier.
    expect(neverConnectedDialError(failed)).toBeNull();
    expect(carrierNetworkFailure('Telnyx POST /v2/calls', failed)).not.toBeInstanceOf(CarrierError);
  });
});

describe('isPublicHttpsUrl', () => {
  it.each([
    ['https://media.twiliocdn.com/x.wav', true],
    ['https://bucket.s3.amazonaws.com/x.wav', true],
    ['https://bucket.s3.amazonaws.com:443/x.wav', true],
    ['https://bucket.s3.amazonaws.com:8443/x.wav', false],
    ['http://bucket.s3.amazonaws.com/x.wav', false],
    ['https://169.254.169.254/latest/meta-data/', false],
    ['https://10.0.0.7/x.wav', false],
    ['https://[::1]/x.wav', false],
    ['https://[fd00::1]/x.wav', false],
    ['https://localhost/x.wav', false],
    ['https://storage.localhost/x.wav', false],
    ['https://metadata.google.internal/x', false],
    ['https://printer.local/x', false],
    ['https://intranet/x', false],
  ])('%s: %s', (url, expected) => {
    expect(isPublicHttpsUrl(new URL(url))).toBe(expected);
  });
});

describe('carrierHostCheck', () => {
  const isCarrier = carrierHostCheck('http://127.0.0.1:4010/api/', /(^|\.)carrier\.com$/);

  it.each([
    ['http://127.0.0.1:4010/recordings/1.wav', true],
    ['http://127.0.0.1:4011/recordings/1.wav', false],
    ['https://carrier.com/x.wav', true],
    ['https://media.carrier.com/x.wav', true],
    ['https://MEDIA.Carrier.com/x.wav', true],
    ['https://media.carrier.com:8443/x.wav', false],
    ['http://media.carrier.com/x.wav', false],
    ['https://carrier.com.example/x.wav', false],
    ['https://notcarrier.com/x.wav', false],
  ])('%s: %s', (url, expected) => {
    expect(isCarrier(new URL(url))).toBe(expected);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-07T10:00:00Z');

  it('reads delta-seconds, whole or not, around spaces', () => {
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs(' 1.5 ', now)).toBe(1500);
    expect(retryAfterMs('0', now)).toBe(0);
  });

  it('reads an HTTP date as the time left until it, and a date passed as none left', () => {
    expect(retryAfterMs('Mon, 07 Dec 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Mon, 07 Dec 2026 09:59:00 GMT', now)).toBe(0);
    // The two obsolete forms a recipient is to accept too.
    expect(retryAfterMs('Monday, 07-Dec-26 10:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('Mon Dec  7 10:00:05 2026', now)).toBe(5_000);
  });

  it('takes anything else as no Retry-After: not numbers JavaScript would read, nor negative or empty values', () => {
    for (const value of [null, '', '  ', '0x10', '1e3', '-5', '5 s', 'Infinity', 'soon']) expect(retryAfterMs(value, now)).toBeUndefined();
  });
});
