import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { SandboxAgent } from './sandbox-agent';

const TOKEN = 'session-token-that-must-stay-secret';

/** An agent-session API answering `status` to the request of the given method and path suffix, 200 to the rest. */
async function sessionApi(failing: { method: string; suffix: string; status: number }): Promise<{ base: string; seen: string[]; server: Server }> {
  const seen: string[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    request.resume();
    request.on('end', () => {
      const suffix = request.url!.replace(`/api/v1/agent-sessions/${TOKEN}`, '');
      seen.push(`${request.method} ${suffix || '/'}`);
      const fails = request.method === failing.method && suffix === failing.suffix;
      response.statusCode = fails ? failing.status : 200;
      response.setHeader('content-type', 'application/json');
      response.end(fails ? '{"code":"service_unavailable"}' : JSON.stringify({ run_id: 7, agent: { opening: 'Hello' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

describe('SandboxAgent', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('goes through the session: read, report, upload, close', async () => {
    const api = await sessionApi({ method: 'NONE', suffix: '', status: 500 });
    server = api.server;

    await new SandboxAgent(api.base).converse(TOKEN, 0);

    expect(api.seen).toEqual(['GET /', 'POST /events', 'PUT /recording', 'POST /events']);
  });

  it.each([
    ['GET', '', 'GET / answered 503'],
    ['PUT', '/recording', 'PUT /recording answered 503'],
  ])('names the failed %s%s without the session token, which the error would carry into logs and the run record', async (method, suffix, said) => {
    const api = await sessionApi({ method, suffix, status: 503 });
    server = api.server;

    const failure = await new SandboxAgent(api.base).converse(TOKEN, 0).catch((error: Error) => error);

    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain(`agent session ${said}`);
    expect((failure as Error).message).not.toContain(TOKEN);
  });
});
