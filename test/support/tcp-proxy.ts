import { createServer, Server, Socket, connect } from 'node:net';

/**
 * A loopback TCP proxy in front of a real service (Postgres, Redis). `cut()`
 * drops every connection and refuses new ones, as if the service went down;
 * `restore()` brings it back. Lets a test take a dependency away from one
 * app without stopping the machine's shared service.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  port = 0;
  /** Connections accepted since the proxy was made, across cuts. */
  accepted = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    this.server = createServer((client) => {
      this.accepted += 1;
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(upstream).pipe(client);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      client.on('close', () => {
        upstream.destroy();
        this.pairs.delete(pair);
      });
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', resolve);
    });
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    return this.port;
  }

  /** The service "goes down": open connections are reset and new ones refused. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * The open connections go silent both ways, closed by neither side, as
   * when a failover or a partition drops their packets; connections made
   * afterwards go through as before.
   */
  silenceOpenConnections(): void {
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
    this.pairs.clear();
  }

  /** The service "comes back" on the same port. */
  async restore(): Promise<void> {
    if (!this.server) await this.start(this.port);
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
