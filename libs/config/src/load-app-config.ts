import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { AppConfig, Network } from './app-config';
import { ConfigError } from './config-error';
import { isAllZero, parseSecretsKey } from './secrets-key';

type Env = Record<string, string | undefined>;

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/voice_agent';
/** Longer than a dial request (15 s) and the look-up that follows one whose answer was lost (15 s). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 35_000;
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_REDIS_SOCKET_TIMEOUT_MS = 15_000;

/** A CIDR (`10.0.0.0/8`, `fd00::/8`) as a network, or undefined when it is not one. */
export function parseNetwork(cidr: string): Network | undefined {
  const [address, prefix, extra] = cidr.split('/');
  const family = isIP(address);
  const bits = /^\d+$/.test(prefix ?? '') ? Number(prefix) : NaN;
  if (extra !== undefined || family === 0 || !(bits >= 0 && bits <= (family === 4 ? 32 : 128))) return undefined;
  return { address, prefix: bits, family: family === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * Validates the environment once and returns a frozen, typed configuration.
 * Every problem is collected so an operator fixes them all in one go.
 */
export function loadAppConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];
  const reader = new EnvReader(env, problems);

  const apiPort = reader.port('PORT', 3000);
  const publicBaseUrl = reader.baseUrl('PUBLIC_BASE_URL', `http://localhost:${apiPort}`);
  const config: AppConfig = {
    nodeEnv: reader.string('NODE_ENV', 'development'),
    databaseUrl: reader.url('DATABASE_URL', DEFAULT_DATABASE_URL, ['postgres:', 'postgresql:']),
    databasePoolSize: reader.integer('DATABASE_POOL_SIZE', 10, 1, 200),
    redisUrl: reader.redisUrl('REDIS_URL', DEFAULT_REDIS_URL),
    // At least BullMQ's longest blocking wait for a job (10 s) and its 1-s margin: a worker's idle connection
    // answers nothing that long, and must not be taken for a dead one. (With no job due, a worker blocks for its
    // `drainDelay`, 5 s by default, which the processors leave as it is: one set past 11 s would need this raised.)
    redisSocketTimeoutMs: reader.integer('REDIS_SOCKET_TIMEOUT_MS', DEFAULT_REDIS_SOCKET_TIMEOUT_MS, 12_000, 600_000),
    queuePrefix: reader.queuePrefix('QUEUE_PREFIX', '{voice-agent}'),
    apiPort,
    apiHost: reader.string('HOST', '0.0.0.0'),
    dialerHealthPort: reader.port('DIALER_HEALTH_PORT', 3001),
    publicBaseUrl,
    apiInternalUrl: reader.url('API_INTERNAL_URL', publicBaseUrl, ['http:', 'https:']).replace(/\/+$/, ''),
    secretsKey: reader.secretsKey('SECRETS_KEY'),
    artifactsDir: resolve(reader.string('ARTIFACTS_DIR', './var/artifacts')),
    logLevel: reader.oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    downloadUrlTtlSeconds: reader.integer('DOWNLOAD_URL_TTL_SECONDS', 3600, 1, 7 * 24 * 3600),
    apiKeyCacheTtlMs: reader.integer('API_KEY_CACHE_TTL_MS', 2000, 0, 5000),
    lookupCacheTtlMs: reader.integer('LOOKUP_CACHE_TTL_MS', 2000, 0, 5000),
    httpIdleTimeoutMs: reader.integer('HTTP_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    httpRequestTimeoutMs: reader.integer('HTTP_REQUEST_TIMEOUT_MS', 300_000, 1_000, 3_600_000),
    dialerConcurrency: reader.integer('DIALER_CONCURRENCY', 200, 1, 1000),
    shutdownGraceMs: reader.integer('SHUTDOWN_GRACE_MS', DEFAULT_SHUTDOWN_GRACE_MS, 0, 600000),
    enqueueTimeoutMs: reader.integer('ENQUEUE_TIMEOUT_MS', 500, 10, 10000),
    dispatchIntervalMs: reader.integer('DISPATCH_INTERVAL_MS', 1000, 50, 60000),
    reaperIntervalMs: reader.integer('REAPER_INTERVAL_MS', 5000, 50, 600000),
    reconcileAfterSeconds: reader.integer('RECONCILE_AFTER_SECONDS', 60, 1, 86400),
    dialTimeoutSeconds: reader.integer('DIAL_TIMEOUT_SECONDS', 120, 1, 86400),
    // At most half of BullMQ's 30 s lock: a lock renewed every 15 s cannot lapse while a claim is younger than that.
    dialClaimLeaseMs: reader.integer('DIAL_CLAIM_LEASE_MS', 10_000, 100, 15_000),
    ringTimeoutSeconds: reader.integer('RING_TIMEOUT_SECONDS', 180, 1, 86400),
    lateAnswerWaitMs: reader.integer('LATE_ANSWER_WAIT_MS', 20_000, 0, 120_000),
    carrierStorageNetworks: reader.networks('CARRIER_STORAGE_NETWORKS'),
    carrierApiUrls: {
      twilio: reader.url('TWILIO_API_URL', 'https://api.twilio.com', ['https:', 'http:']).replace(/\/+$/, ''),
      telnyx: reader.url('TELNYX_API_URL', 'https://api.telnyx.com', ['https:', 'http:']).replace(/\/+$/, ''),
      vonage: reader.url('VONAGE_API_URL', 'https://api.nexmo.com', ['https:', 'http:']).replace(/\/+$/, ''),
      plivo: reader.url('PLIVO_API_URL', 'https://api.plivo.com', ['https:', 'http:']).replace(/\/+$/, ''),
    },
    agentRuntimeUrl: reader.url('AGENT_RUNTIME_URL', 'ws://127.0.0.1:8090/media', ['ws:', 'wss:']),
    agentSessionTtlSeconds: reader.integer('AGENT_SESSION_TTL_SECONDS', 4 * 3600, 60, 7 * 24 * 3600),
  };
  if (!problems.some((problem) => problem.startsWith('SECRETS_KEY')) && isAllZero(config.secretsKey) && !isLoopbackUrl(config.publicBaseUrl)) {
    problems.push(
      `SECRETS_KEY is the public all-zero development key, and PUBLIC_BASE_URL (${config.publicBaseUrl}) is not this machine: ` +
        'anyone who reaches the service could forge download links to every recording and decrypt the stored carrier ' +
        'credentials; set your own (openssl rand -hex 32)',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

function decodable(component: string): boolean {
  try {
    decodeURIComponent(component);
    return true;
  } catch {
    return false;
  }
}

/**
 * What the configuration allows but an operator must hear about, logged at
 * start as warnings: the all-zero SECRETS_KEY that docker-compose.yml once
 * fell back to is public (taken only with a loopback PUBLIC_BASE_URL); the
 * loopback defaults of PUBLIC_BASE_URL and AGENT_RUNTIME_URL do for the
 * sandbox carrier on one machine, and for no real carrier, which would be
 * given callbacks it cannot reach; and an unencrypted (ws://) AGENT_RUNTIME_URL
 * elsewhere does for every carrier but Twilio.
 */
export function configWarnings(config: AppConfig): string[] {
  const warnings: string[] = [];
  if (isAllZero(config.secretsKey)) {
    warnings.push(
      'SECRETS_KEY is the public all-zero development key: anyone can decrypt the stored carrier credentials and forge ' +
        'download links; outside a development machine set your own (openssl rand -hex 32)',
    );
  }
  if (isLoopbackUrl(config.publicBaseUrl)) {
    warnings.push(
      `PUBLIC_BASE_URL is ${config.publicBaseUrl}, a loopback address: every dial gives the carrier its answer, status and ` +
        'recording callbacks under it, and webhooks are verified against it, so no carrier but the sandbox can reach this ' +
        "service; set the API's public HTTPS address, the same on the API and every dialer",
    );
  }
  if (isLoopbackUrl(config.agentRuntimeUrl)) {
    warnings.push(
      `AGENT_RUNTIME_URL is ${config.agentRuntimeUrl}, a loopback address: a real carrier cannot stream an answered call to it; ` +
        "set the voice-agent runtime's public address, unless every configuration sets settings.agent_runtime_url",
    );
  } else if (URL.parse(config.agentRuntimeUrl)?.protocol === 'ws:') {
    warnings.push(
      `AGENT_RUNTIME_URL is ${config.agentRuntimeUrl}, unencrypted: Twilio streams calls to wss:// only, so a Twilio ` +
        "configuration without a wss:// settings.agent_runtime_url of its own has its answered calls' audio refused",
    );
  }
  return warnings;
}

/** A URL whose host is this machine: `localhost` (and its subdomains), 127.0.0.0/8 or ::1. */
function isLoopbackUrl(url: string): boolean {
  // One that does not parse is named among the problems already.
  if (!URL.canParse(url)) return false;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}

class EnvReader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  string(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === '' ? fallback : value;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.env[name];
    if (raw === undefined || raw === '') return fallback;
    // Digits only: Number() would read "" padded with spaces as 0 (a zero grace, say) and "1e3" as 1000.
    const value = /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  port(name: string, fallback: number): number {
    return this.integer(name, fallback, 0, 65535);
  }

  oneOf(name: string, fallback: string, allowed: string[]): string {
    const value = this.string(name, fallback);
    if (!allowed.includes(value)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
      return fallback;
    }
    return value;
  }

  url(name: string, fallback: string, protocols: string[]): string {
    const value = this.string(name, fallback);
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(`${name} must use ${protocols.join(' or ')} (got "${parsed.protocol}")`);
      }
      if (!decodable(parsed.username) || !decodable(parsed.password)) {
        // The clients decode them, and would throw at the first connection instead; the value is never echoed.
        this.problems.push(`${name} has a user or password whose percent-escapes do not decode (a "%" not followed by two hex digits, or bytes that are not UTF-8): write a literal "%" as %25`);
      }
    } catch {
      this.problems.push(`${name} must be a URL`);
    }
    return value;
  }

  /**
   * An http(s) URL that paths are appended to, as the WHATWG parser writes
   * it (the host in lower case, the scheme's default port left out), without
   * a trailing slash: carriers are given callback URLs built on it and sign
   * them as given, and a webhook's signature is checked against one built on
   * it again, so both must be the one spelling (Plivo's check rebuilds the
   * URL it verifies through the parser). A query or a fragment would end up
   * before the appended path: refused.
   */
  baseUrl(name: string, fallback: string): string {
    const value = this.url(name, fallback, ['http:', 'https:']);
    if (!URL.canParse(value)) return value;
    const parsed = new URL(value);
    if (parsed.search !== '' || parsed.hash !== '') this.problems.push(`${name} must not have a query or a fragment (got "${parsed.search}${parsed.hash}")`);
    return parsed.href.replace(/\/+$/, '');
  }

  /** A redis(s) URL whose path, if any, is a database number: `/2`, not `/2/` or `/x`, which clients read differently. */
  redisUrl(name: string, fallback: string): string {
    const value = this.url(name, fallback, ['redis:', 'rediss:']);
    const path = URL.canParse(value) ? new URL(value).pathname : '/';
    if (!/^\/?(\d+)?$/.test(path)) this.problems.push(`${name} must name its database as a number after the port, such as /0 (got "${path}")`);
    return value;
  }

  /** Comma-separated CIDRs (`10.0.0.0/8, fd00::/8`); none when unset. */
  networks(name: string): Network[] {
    const cidrs = this.string(name, '')
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');
    const networks: Network[] = [];
    for (const cidr of cidrs) {
      const network = parseNetwork(cidr);
      if (network) networks.push(network);
      else this.problems.push(`${name} must list networks as CIDRs separated by commas, such as 10.0.0.0/8,fd00::/8 (got "${cidr}")`);
    }
    return networks;
  }

  queuePrefix(name: string, fallback: string): string {
    const value = this.string(name, fallback);
    if (!/^\{[A-Za-z0-9_.-]+\}$/.test(value)) {
      this.problems.push(
        `${name} must be a Redis Cluster hash tag such as {voice-agent} (letters, digits, _ . - inside braces)`,
      );
    }
    return value;
  }

  /**
   * The key in `name`, or else in the file `<name>_FILE` names (as Docker
   * secrets and docker-compose.yml hand it over): 32 bytes as 64 hex
   * characters or base64 (`parseSecretsKey`). Never echoes the value.
   */
  secretsKey(name: string): Buffer {
    const fileVariable = `${name}_FILE`;
    let raw = this.env[name];
    let from = name;
    const file = this.env[fileVariable];
    if ((raw === undefined || raw === '') && file !== undefined && file !== '') {
      from = `${fileVariable} (${file})`;
      try {
        raw = readFileSync(file, 'utf8');
      } catch (error) {
        this.problems.push(`${from} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
        return Buffer.alloc(32);
      }
    }
    // An empty file is named as the file, not taken for a key never given.
    if (raw === undefined || (raw === '' && from === name)) {
      this.problems.push(`${name} is required: 32 random bytes as hex or base64 (openssl rand -hex 32), or ${fileVariable} naming a file that holds them`);
      return Buffer.alloc(32);
    }
    const parsed = parseSecretsKey(raw);
    if (!parsed.ok) {
      this.problems.push(`${from} ${parsed.problem}`);
      return Buffer.alloc(32);
    }
    return parsed.key;
  }
}
