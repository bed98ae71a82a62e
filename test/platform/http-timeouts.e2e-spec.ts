import { connect } from 'node:net';
import { DependenciesHealth } from '../../libs/health/src/dependencies.health';
import { graph } from '../management/management-helpers';
import { createOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';

/** Sends a request head announcing a body, and part of it; answers how long until the API closed the connection. */
const stalledRequest = (baseUrl: string, path: string, headers: string, method = 'POST') =>
  new Promise<{ closedAfterMs: number; answer: string }>((resolve, reject) => {
    const { hostname, port } = new URL(baseUrl);
    const socket = connect(Number(port), hostname);
    const started = Date.now();
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve({ closedAfterMs: Date.now() - started, answer }));
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${headers}\r\n`);
    socket.write('{"phone_number":');
    // Past the idle timeout many times over: the test fails on this if the API keeps the connection.
    setTimeout(() => socket.destroy(new Error('the API kept a connection that sent nothing for 15 s')), 15_000).unref();
  });

const TRIGGER = '/api/v1/public/agent/00000000-0000-4000-8000-000000000000';

/**
 * The gateway does not keep a connection that sends nothing: a request whose
 * body stops arriving (a recording upload held open, which keeps its share
 * of the recordings' memory budget while it lasts) is closed after
 * HTTP_IDLE_TIMEOUT_MS.
 */
describe('HTTP connections that stop sending', () => {
  let apps: TestApps;
  let adminKey: string;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false, env: { HTTP_IDLE_TIMEOUT_MS: '1000' } });
    ({ adminKey } = await createOrganization(apps.dataSource, 'Stalled bodies'));
  });
  afterAll(() => apps.close());

  /** Sends raw bytes and answers the status and JSON body the API wrote before closing the connection. */
  const rawExchange = (bytes: string) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const { hostname, port } = new URL(apps.client.baseUrl);
      const socket = connect(Number(port), hostname);
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      socket.on('error', reject);
      socket.on('close', () => {
        const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
        if (!status) return reject(new Error(`no HTTP answer: ${answer.slice(0, 200)}`));
        resolve({ status: Number(status[1]), body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) });
      });
      socket.end(bytes);
    });

  it('keeps the connection of a request whose handler works longer than the idle timeout, and answers it', async () => {
    const health = apps.api.get(DependenciesHealth);
    const probe = health.postgres.bind(health);
    // The handler waits 1.5 s on Postgres, past the 1-s idle timeout, with the request in and nothing to send yet.
    const slow = jest.spyOn(health, 'postgres').mockImplementationOnce(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return probe();
    });

    const started = Date.now();
    let probes = 0;
    const answer = await fetch(`${apps.client.baseUrl}/health/ready`).finally(() => {
      probes = slow.mock.calls.length;
      slow.mockRestore();
    });

    expect(answer.status).toBe(200);
    expect(probes).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
  });

  it('answers what is not HTTP, and headers too large, with the error body every other error has', async () => {
    const garbage = await rawExchange('HELLO THERE\r\n\r\n');
    expect(garbage).toEqual({
      status: 400,
      body: { statusCode: 400, code: 'bad_request', message: 'The request is not valid HTTP', request_id: expect.any(String) },
    });
    const huge = await rawExchange(`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toEqual({
      status: 431,
      body: { statusCode: 431, code: 'headers_too_large', message: 'The request headers are too large', request_id: expect.any(String) },
    });
  });

  it('closes a connection whose request body stops arriving, without answering it', async () => {
    const { closedAfterMs, answer } = await stalledRequest(
      apps.client.baseUrl,
      TRIGGER,
      `Content-Type: application/json\r\nContent-Length: 1000\r\nX-API-Key: ${adminKey}\r\n`,
    );
    expect(closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(closedAfterMs).toBeLessThan(10_000);
    expect(answer).toBe('');
  });
});

/**
 * A request refused on its head is answered at once and its connection
 * closed, lingering for what its client still sends. On an idle timeout of
 * 10 s (a lingering connection waits 5 s at most for more bytes), so that
 * "at once" is seconds from "when the connection went idle".
 */
describe('HTTP connections refused on their head', () => {
  let apps: TestApps;
  let adminKey: string;
  let organizationId: number;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false, env: { HTTP_IDLE_TIMEOUT_MS: '10000' } });
    ({ adminKey, organizationId } = await createOrganization(apps.dataSource, 'Refused heads'));
  });
  afterAll(() => apps.close());

  it.each([
    ['a trigger without a key', 401, 'POST', TRIGGER, () => 'Content-Type: application/json\r\n'],
    ['a trigger with a key, of a type not taken', 415, 'POST', TRIGGER, () => `Content-Type: text/plain\r\nX-API-Key: ${adminKey}\r\n`],
    ['a recording upload with a bad token', 403, 'PUT', '/api/v1/agent-sessions/not.valid/recording', () => 'Content-Type: audio/wav\r\n'],
  ])('answers a request refused on its head (%s) at once, and closes its connection rather than wait for the body', async (_what, status, method, path, headers) => {
    const { closedAfterMs, answer } = await stalledRequest(apps.client.baseUrl, path, `${headers()}Content-Length: 1000\r\n`, method);
    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(closedAfterMs).toBeLessThan(3_000);
  });

  /**
   * Sends a request head and its whole body before reading, as Python's urllib does, and answers the answer read
   * and whether sending failed: a connection closed under a body still arriving is reset, and the send breaks.
   */
  const wholeBodyFirst = (method: string, path: string, headers: string, bodyBytes: number) =>
    new Promise<{ sendError: string | null; answer: string }>((resolve) => {
      const { hostname, port } = new URL(apps.client.baseUrl);
      const socket = connect(Number(port), hostname);
      let answer = '';
      let sendError: string | null = null;
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('error', (error: NodeJS.ErrnoException) => (sendError ??= error.code ?? error.message));
      socket.on('close', () => resolve({ sendError, answer }));
      socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${headers}Content-Length: ${bodyBytes}\r\n\r\n`);
      socket.write(Buffer.alloc(bodyBytes, 0x20), (error) => {
        if (error) sendError ??= (error as NodeJS.ErrnoException).code ?? error.message;
        // All sent: the client now closes its side, as it would once it has read the answer.
        else socket.end();
      });
      setTimeout(() => socket.destroy(new Error('no close within 20 s')), 20_000).unref();
    });

  it.each([
    ['a trigger without a key', 401, 'POST', TRIGGER, () => 'Content-Type: application/json\r\n'],
    ['a trigger over the body limit', 413, 'POST', TRIGGER, () => `Content-Type: application/json\r\nX-API-Key: ${adminKey}\r\n`],
    ['a recording upload with a bad token', 403, 'PUT', '/api/v1/agent-sessions/not.valid/recording', () => 'Content-Type: audio/wav\r\n'],
  ])('lets a client that sends its whole body first read the answer of %s, rather than break its send', async (_what, status, method, path, headers) => {
    const { sendError, answer } = await wholeBodyFirst(method, path, headers(), 24 * 1024 * 1024);
    expect(sendError).toBeNull();
    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
  });

  it('runs no request sent behind a body refused with Connection: close, and answers only the refusal', async () => {
    const { hostname, port } = new URL(apps.client.baseUrl);
    const refusedBody = '{"phone_number":"+14155550100"}'.padEnd(1000, ' ');
    const creation = JSON.stringify({ name: 'Sent behind a refusal', definition: graph({ trigger: null }) });
    // Half-open, as a client that goes on with its requests: the connection lingers rather than close on its FIN.
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    // Time enough for the request behind to be run, were it to be: then the client closes.
    socket.once('end', () => setTimeout(() => socket.destroy(), 1_000));
    // A keyless trigger (refused on its head) and its body, then a workflow's creation with a valid key, at once.
    socket.write(
      `POST ${TRIGGER} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${refusedBody.length}\r\n\r\n${refusedBody}` +
        `POST /api/v1/workflows HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nX-API-Key: ${adminKey}\r\n` +
        `Content-Length: ${Buffer.byteLength(creation)}\r\n\r\n${creation}`,
    );
    await closed;

    expect(answer.startsWith('HTTP/1.1 401 ')).toBe(true);
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(1);
    const created = await apps.dataSource.query(`SELECT id FROM workflows WHERE organization_id = $1`, [organizationId]);
    expect(created).toEqual([]);
  });
});
