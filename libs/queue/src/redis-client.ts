import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { APP_CONFIG, AppConfig } from '@app/config';
import { redisConnectionOptions } from './redis-connection';

/** How long a gateway starting waits for its Redis connection before it starts without. */
const PRODUCER_READY_WAIT_MS = 2_000;

/** A Lua script run by its SHA1 (EVALSHA), sent whole (EVAL) when Redis does not hold it yet. */
export type RedisScript = (keys: string[], args: Array<string | number>) => Promise<unknown>;

/**
 * A plain ioredis connection for what is not a BullMQ queue operation:
 * pacing and concurrency scripts, backlog counts, job look-ups. Keys go
 * under the queue prefix (`keyFor`), so everything shares one Redis Cluster
 * hash slot. Its `role` is its app's, as for BullMQ's connections: the
 * gateway's fails fast while Redis is away (a trigger counts its backlog
 * here, and must not leave commands waiting for Redis in memory), the
 * dialer's waits for it.
 *
 * Commands issued in the same event-loop turn travel in one write
 * (ioredis auto-pipelining): many concurrent calls each run a pacing and a
 * slot script, and a socket write per command cost more CPU than the
 * scripts. Each command keeps its own reply and error; nothing here needs
 * two commands to run back to back. BullMQ's own connections are not
 * pipelined this way.
 */
@Injectable()
export class RedisClient implements OnModuleInit, OnApplicationShutdown {
  readonly redis: Redis;
  private readonly logger = new Logger('Redis');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly role: 'producer' | 'worker' = 'worker',
  ) {
    // The same connection options as BullMQ's, read from the URL the same way: both must reach the same database.
    this.redis = new Redis({ ...redisConnectionOptions(config.redisUrl, role, config.redisSocketTimeoutMs), lazyConnect: false, enableAutoPipelining: true });
    // Errors surface on the commands that fail; the connection retries by itself. But for a database Redis refuses
    // as the connection is made (checked at start, and still possible on a Redis that came later, or restarted with
    // fewer databases): ioredis goes on in database 0, and only this error says so.
    this.redis.on('error', (error: Error & { command?: { name?: string } }) => {
      if (error.name === 'ReplyError' && error.command?.name === 'select') {
        this.logger.error(
          { err: error },
          `REDIS_URL selects a database this Redis refuses: this process is working in database 0, where another deployment's queues may be; stop it and fix REDIS_URL`,
        );
      }
    });
  }

  /**
   * A connection that fails fast refuses commands until it is ready: the
   * app starts once it is, or past the connect timeout with Redis away (the
   * gateway answers triggers without Redis).
   */
  async onModuleInit(): Promise<void> {
    if (this.role !== 'producer' || this.redis.status === 'ready') return;
    // Not `events.once`: it rejects on the connection's first 'error', which Redis away is.
    let done = (): void => undefined;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, PRODUCER_READY_WAIT_MS);
      done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.redis.once('ready', done);
    });
    this.redis.off('ready', done);
  }

  keyFor(...parts: Array<string | number>): string {
    return [this.config.queuePrefix, ...parts].join(':');
  }

  /**
   * A function that runs a Lua script by its SHA1 (EVALSHA), so the script's
   * text is not sent (nor hashed by Redis) on every call; a Redis that does
   * not hold it yet (first use, or after a restart) answers NOSCRIPT, and
   * that call is sent again as EVAL with the text, which loads it.
   *
   * Not ioredis' `defineCommand`: a command defined while an auto-pipeline
   * of this connection waits for its turn is missing from that pipeline,
   * and a call to it in the same turn crashed the process (ioredis counts a
   * reply for it that never comes, and throws outside any promise). EVALSHA
   * and EVAL are built in, present on every pipeline. `name` labels errors.
   * `numberOfKeys` null: the script takes as many keys as each call passes.
   */
  script(name: string, lua: string, numberOfKeys: number | null): RedisScript {
    const sha = createHash('sha1').update(lua).digest('hex');
    return async (keys, args) => {
      if (numberOfKeys !== null && keys.length !== numberOfKeys) {
        throw new Error(`${name} takes ${numberOfKeys} keys, was given ${keys.length}`);
      }
      try {
        return await this.redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
        return this.redis.eval(lua, keys.length, ...keys, ...args);
      }
    };
  }

  /**
   * Once only: a second close of the app (Nest runs its whole shutdown again)
   * finds the connection ended, and a `disconnect()` then would arm ioredis'
   * 2 s timer to destroy a socket long gone, holding the process open.
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.redis.status !== 'end') this.redis.disconnect();
  }
}
