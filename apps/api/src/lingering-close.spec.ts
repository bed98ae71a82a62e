import { connect, createServer, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { lingerOnClose } from './lingering-close';

/** A server whose every connection lingers when closed, and is closed (`destroySoon`, as Node's HTTP server does) on its first bytes. */
async function lingeringServer(options: { idleMs: number; maxMs: number }): Promise<{ server: Server; port: number; closedAfterMs: Promise<number> }> {
  let closed!: (ms: number) => void;
  const closedAfterMs = new Promise<number>((resolve) => (closed = resolve));
  const server = createServer({ allowHalfOpen: true }, (socket: Socket) => {
    lingerOnClose(socket, options);
    socket.resume();
    socket.once('data', () => {
      const started = Date.now();
      socket.once('close', () => closed(Date.now() - started));
      socket.write('answer');
      socket.destroySoon();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, closedAfterMs };
}

/** A client that keeps its side open; answers what it read and when the server's FIN came. */
function halfOpenClient(port: number, trickleEveryMs?: number) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const started = Date.now();
  let read = '';
  socket.on('data', (chunk: Buffer) => (read += chunk.toString()));
  const ended = new Promise<{ read: string; afterMs: number }>((resolve) => socket.once('end', () => resolve({ read, afterMs: Date.now() - started })));
  socket.on('error', () => undefined);
  socket.write('first bytes');
  const trickle = trickleEveryMs ? setInterval(() => socket.write('more'), trickleEveryMs) : undefined;
  return { socket, ended, stop: () => (clearInterval(trickle), socket.destroy()) };
}

describe('lingerOnClose', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('sends the answer and a FIN at once, then closes once the client closes its side', async () => {
    const started = await lingeringServer({ idleMs: 5_000, maxMs: 30_000 });
    server = started.server;
    const client = halfOpenClient(started.port);
    expect(await client.ended).toEqual({ read: 'answer', afterMs: expect.any(Number) });
    client.socket.end();
    expect(await started.closedAfterMs).toBeLessThan(1_000);
    client.stop();
  });

  it('closes after the idle time when the client sends nothing more and keeps its side open', async () => {
    const started = await lingeringServer({ idleMs: 300, maxMs: 30_000 });
    server = started.server;
    const client = halfOpenClient(started.port);
    const closedAfterMs = await started.closedAfterMs;
    client.stop();
    expect(closedAfterMs).toBeGreaterThanOrEqual(250);
    expect(closedAfterMs).toBeLessThan(2_000);
  });

  it('closes after the longest linger however steadily the client goes on sending', async () => {
    const started = await lingeringServer({ idleMs: 300, maxMs: 1_000 });
    server = started.server;
    // Bytes every 100 ms: never idle for 300 ms.
    const client = halfOpenClient(started.port, 100);
    const closedAfterMs = await started.closedAfterMs;
    client.stop();
    expect(closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(closedAfterMs).toBeLessThan(3_000);
  });
});
