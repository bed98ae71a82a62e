/** The typed configuration both apps run with. Only `loadAppConfig` reads the environment. */
export interface AppConfig {
  readonly nodeEnv: string;
  readonly databaseUrl: string;
  readonly databasePoolSize: number;
  readonly redisUrl: string;
  /** BullMQ key prefix, written as a Redis Cluster hash tag (`{name}`). */
  readonly queuePrefix: string;
  readonly apiPort: number;
  readonly apiHost: string;
  readonly dialerHealthPort: number;
  /** Absolute base that download links are built from, without a trailing slash. */
  readonly publicBaseUrl: string;
  /** 32 bytes that encrypt carrier credentials and sign download links. */
  readonly secretsKey: Buffer;
  readonly artifactsDir: string;
  readonly logLevel: string;
  readonly downloadUrlTtlSeconds: number;
  /** How long an API key lookup may be served from memory; bounds how late a revocation takes effect. */
  readonly apiKeyCacheTtlMs: number;
  readonly dialerConcurrency: number;
  readonly shutdownGraceMs: number;
}
