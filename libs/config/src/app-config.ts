/** The typed configuration both apps run with. Only `loadAppConfig` reads the environment. */
/** A network written as a CIDR (`10.0.0.0/8`, `fd00::/8`): its address, prefix length and family. */
export interface Network {
  readonly address: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

export interface AppConfig {
  readonly nodeEnv: string;
  readonly databaseUrl: string;
  readonly databasePoolSize: number;
  readonly redisUrl: string;
  /**
   * A Redis connection with commands sent and nothing received for this
   * long is given up and made again. A connection closed by neither side
   * (a partition, a failover that moves the address, a host that lost
   * power) would otherwise wait for the kernel to give up retransmitting,
   * about 15 minutes.
   */
  readonly redisSocketTimeoutMs: number;
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
  /**
   * How long a trigger's target (workflow, definition check) and a telephony configuration may be
   * served from memory; bounds how late a deactivation, publish or configuration change is seen by
   * another replica (the replica that made the change forgets at once).
   */
  readonly lookupCacheTtlMs: number;
  /**
   * The gateway closes a connection on which nothing moves either way for
   * this long while a request arrives or its answer is sent (not while a
   * handler works on a request that has arrived: see createApiApp; between
   * requests `keepAliveTimeout` governs), and answers 408 to one whose
   * request has not fully arrived within
   * HTTP_REQUEST_TIMEOUT_MS: an upload held open sending nothing would
   * otherwise keep its share of the recording budget forever.
   */
  readonly httpIdleTimeoutMs: number;
  readonly httpRequestTimeoutMs: number;
  readonly dialerConcurrency: number;
  /** How long a dialer waits for in-flight dials on SIGTERM before it exits anyway. */
  readonly shutdownGraceMs: number;
  /** The gateway answers without waiting longer than this for Redis; the dispatcher enqueues later. */
  readonly enqueueTimeoutMs: number;
  readonly dispatchIntervalMs: number;
  readonly reaperIntervalMs: number;
  /** A dialing or ringing run with no news for this long is looked up at its carrier. */
  readonly reconcileAfterSeconds: number;
  /** A run still dialing (no carrier answer) after this long ends failed. */
  readonly dialTimeoutSeconds: number;
  /**
   * How long after claiming a run a dialer may still send its dial. Past it
   * (the process was stopped or blocked) the job's lock may have lapsed and the
   * run gone to another dialer, so the claim is handed back instead.
   */
  readonly dialClaimLeaseMs: number;
  /** A run still ringing after this long ends failed. */
  readonly ringTimeoutSeconds: number;
  /** How long a carrier failure that may follow an answer (a Telnyx `unspecified` hang-up) waits for the answer. */
  readonly lateAnswerWaitMs: number;
  /** Private networks (CIDRs) a carrier's storage host may resolve to and still be fetched from; none by default. */
  readonly carrierStorageNetworks: readonly Network[];
  /** Base URLs of the carriers' REST APIs; tests point them at loopback fakes. */
  readonly carrierApiUrls: Readonly<Record<'twilio' | 'telnyx' | 'vonage' | 'plivo', string>>;
  /** The voice-agent runtime's media WebSocket that answered calls stream to (a configuration may override it). */
  readonly agentRuntimeUrl: string;
  /** Where the dialer reaches the API itself (the sandbox carrier's callbacks); defaults to PUBLIC_BASE_URL. */
  readonly apiInternalUrl: string;
  /** Lifetime of an agent session token (it also stops working once the run has ended). */
  readonly agentSessionTtlSeconds: number;
}

/** Node looks for requests past their timeout every 30 s. */
const REQUEST_TIMEOUT_CHECK_MS = 30_000;

/**
 * How long after its admission an upload of the agent runtime's recording
 * may still be arriving: its request's timeout, and Node's check of it. The
 * dialer finishing a call waits that long for it; a gateway admits no other
 * upload for the run meanwhile.
 */
export function recordingUploadWaitMs(config: Pick<AppConfig, 'httpRequestTimeoutMs'>): number {
  return config.httpRequestTimeoutMs + REQUEST_TIMEOUT_CHECK_MS;
}
