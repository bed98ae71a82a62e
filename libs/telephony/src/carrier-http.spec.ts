import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { carrierHttp, isPublicHttpsUrl, MAX_REDIRECTS, RedirectRefused } from './carrier-http';

interface Hop {
  url: string;
  authorization: string | undefined;
}

/** A server on 127.0.0.1 that answers with `answer(path)` and records each request it gets. */
async function server(answer: (path: string) => { status: number; location?: string; body?: string }): Promise<{ base: string; hops: Hop[]; close: () => Promise<void> }> {
  const hops: Hop[] = [];
  const listening: Server = createServer((request, response) => {
    hops.push({ url: request.url!, authorization: request.headers.authorization });
    const { status, location, body } = answer(request.url!);
    response.writeHead(status, location ? { location } : { 'content-type': 'audio/wav' }).end(body ?? '');
  });
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`,
    hops,
    close: () => new Promise<void>((resolve) => listening.close(() => resolve())),
  };
}

const download = (url: string, followRedirect?: (target: URL) => boolean) =>
  carrierHttp('Carrier', url, { method: 'GET', authorization: 'Basic c2VjcmV0', timeoutMs: 5_000, followRedirect });

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

    const response = await download(`${carrier.base}/file`, () => true);

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

    await expect(download(`${carrier.base}/file`, (target) => target.origin === carrier.base)).rejects.toThrow(
      new RedirectRefused(`refused to follow a redirect to ${internal.base}`),
    );
    expect(internal.hops).toEqual([]);
  });

  it(`gives up after ${MAX_REDIRECTS} redirects`, async () => {
    const carrier = await started((path) => ({ status: 302, location: `/hop${Number(path.replace('/hop', '')) + 1}` }));

    await expect(download(`${carrier.base}/hop0`, () => true)).rejects.toThrow(`redirected more than ${MAX_REDIRECTS} times`);
    expect(carrier.hops).toHaveLength(MAX_REDIRECTS + 1);
  });
});

describe('isPublicHttpsUrl', () => {
  it.each([
    ['https://media.twiliocdn.com/x.wav', true],
    ['https://bucket.s3.amazonaws.com/x.wav', true],
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
