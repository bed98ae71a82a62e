import type { Socket } from 'node:net';

/** The longest a refused request's connection goes on reading what its client still sends. */
export const LINGER_MAX_MS = 30_000;
/** How long it waits for the next bytes before it closes. */
export const LINGER_IDLE_MS = 5_000;

const lingering = new WeakSet<Socket>();

/**
 * Has the connection close lingering when Node closes it after the answer
 * (`Connection: close`, sent when a request is refused before its body was
 * read). A plain close while the client is still sending its body makes the
 * kernel answer the next bytes with a reset, and a client that writes its
 * whole body before it reads (Python's urllib and requests, for one) then
 * sees a broken pipe instead of the 401, 403 or 413 it was sent. So the
 * connection closes as web servers close it (nginx's lingering close): the
 * answer and a FIN are sent, what still arrives is read and dropped (Node's
 * HTTP parser discards the unread body), and the socket is destroyed once
 * the client closes its side, after `idleMs` without a byte (at most
 * LINGER_IDLE_MS), or after `maxMs` in all.
 */
export function lingerOnClose(
  socket: Socket | null | undefined,
  { idleMs = LINGER_IDLE_MS, maxMs = LINGER_MAX_MS }: { idleMs?: number; maxMs?: number } = {},
): void {
  if (!socket || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  // Node's HTTP server calls destroySoon once the answer of a request that ends the connection is written.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.destroyed) return;
    this.end();
    const stop = () => this.destroy();
    const deadline = setTimeout(stop, maxMs);
    deadline.unref();
    this.setTimeout(Math.min(idleMs, LINGER_IDLE_MS), stop);
    this.once('end', stop);
    this.once('close', () => clearTimeout(deadline));
  };
}

/**
 * Whether the connection is to close after an answer already decided: Node
 * still parses what arrives on it, and hands on any request a client sent
 * after the refused one's body. None may be run (RFC 9112, 9.6: a server
 * that sent `close` processes no further request): its answer could not be
 * written, and a trigger would place a call its client never hears of.
 */
export function isClosing(socket: Socket | null | undefined): boolean {
  return socket !== null && socket !== undefined && lingering.has(socket);
}
