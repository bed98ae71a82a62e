import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { APP_CONFIG, AppConfig } from '@app/config';

/**
 * A plain ioredis connection for what is not a BullMQ queue operation:
 * pacing and concurrency scripts, job look-ups. Keys go under the queue
 * prefix (`keyFor`), so everything shares one Redis Cluster hash slot.
 */
@Injectable()
export class RedisClient implements OnApplicationShutdown {
  readonly redis: Redis;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
    // Errors surface on the commands that fail; the connection retries by itself.
    this.redis.on('error', () => undefined);
  }

  keyFor(...parts: Array<string | number>): string {
    return [this.config.queuePrefix, ...parts].join(':');
  }

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
  }
}
