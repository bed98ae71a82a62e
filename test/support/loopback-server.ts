import { createServer, Server, Socket } from 'node:net';

/** A TCP server on a loopback port that accepts connections and answers nothing, or does `onData` to the first bytes. */
export interface LoopbackServer {
  server: Server;
  port: number;
  /** Every connection accepted and not yet forgotten. */
  sockets: Set<Socket>;
}

export async function loopbackServer(onData?: (socket: Socket) => void): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    if (onData) socket.once('data', () => onData(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, sockets };
}

/** Cuts every connection the server accepted, then closes it. */
export function closeLoopbackServer(running: LoopbackServer): Promise<void> {
  for (const socket of running.sockets) socket.destroy();
  return new Promise<void>((resolve) => running.server.close(() => resolve()));
}
