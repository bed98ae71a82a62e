/**
 * ioredis' own rejections of a command it could not send, or whose answer
 * never came: no connection and no offline queue (the gateway's clients),
 * the connection lost with the command in flight (a socket timeout too ends
 * so), its retries spent, its own timeout passed.
 */
const CLIENT_MESSAGES = [
  "Stream isn't writeable",
  'Connection is closed',
  'Reached the max retries per request limit',
  'Command timed out',
];

/**
 * Replies of a Redis server that cannot serve now but will: loading its data
 * after a restart, a replica since a failover, a script holding it, out of
 * the memory it may use, refusing writes since a save to disk failed.
 */
const SERVER_REPLIES = /^(LOADING|READONLY|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|OOM|MISCONF) /;

/**
 * True when `error` says Redis cannot serve this now, not that the command is
 * wrong. An error reply is told by its name (`ReplyError`, as ioredis names
 * every reply of Redis' own), so that a message of another library's that
 * happens to start alike is not taken for one.
 */
export function isRedisUnavailable(error: unknown): boolean {
  const candidate = error as { name?: unknown; message?: unknown } | null | undefined;
  const message = candidate?.message;
  if (typeof message !== 'string') return false;
  if (candidate?.name === 'ReplyError') return SERVER_REPLIES.test(message);
  return CLIENT_MESSAGES.some((text) => message.startsWith(text));
}
