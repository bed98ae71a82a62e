import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './config-error';
import { configWarnings, loadAppConfig } from './load-app-config';

const SECRET = '6486f0d2fe46eebe22355e9fed56541aa54ad9bc18c1498eaa119831adf9dae7';

describe('loadAppConfig', () => {
  it('applies the local defaults when only the secrets key is given', () => {
    const config = loadAppConfig({ SECRETS_KEY: SECRET });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/voice_agent',
      redisUrl: 'redis://127.0.0.1:6379',
      apiPort: 3000,
      queuePrefix: '{voice-agent}',
      publicBaseUrl: 'http://localhost:3000',
      downloadUrlTtlSeconds: 3600,
    });
    expect(config.secretsKey).toEqual(Buffer.from(SECRET, 'hex'));
  });

  it('names every invalid variable at once', () => {
    let caught: unknown;
    try {
      loadAppConfig({ SECRETS_KEY: 'short', PORT: 'eighty', QUEUE_PREFIX: 'no-braces', DATABASE_URL: 'mysql://x' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as ConfigError).message;
    for (const name of ['SECRETS_KEY', 'PORT', 'QUEUE_PREFIX', 'DATABASE_URL']) expect(message).toContain(name);
  });

  it('takes integers written as digits only, and refuses a blank or an exponent rather than reading it as 0 or 1000', () => {
    expect(loadAppConfig({ SECRETS_KEY: SECRET, SHUTDOWN_GRACE_MS: ' 5000 ' }).shutdownGraceMs).toBe(5000);
    for (const raw of [' ', '1e3', '12ms', '0x10', '5.5']) {
      expect(() => loadAppConfig({ SECRETS_KEY: SECRET, SHUTDOWN_GRACE_MS: raw })).toThrow(
        `SHUTDOWN_GRACE_MS must be an integer from 0 to 600000 (got "${raw}")`,
      );
    }
  });

  it("takes a Redis socket timeout of 12 s at least, past BullMQ's longest blocking wait for a job", () => {
    expect(loadAppConfig({ SECRETS_KEY: SECRET }).redisSocketTimeoutMs).toBe(15_000);
    expect(loadAppConfig({ SECRETS_KEY: SECRET, REDIS_SOCKET_TIMEOUT_MS: '12000' }).redisSocketTimeoutMs).toBe(12_000);
    expect(() => loadAppConfig({ SECRETS_KEY: SECRET, REDIS_SOCKET_TIMEOUT_MS: '5000' })).toThrow(
      'REDIS_SOCKET_TIMEOUT_MS must be an integer from 12000 to 600000 (got "5000")',
    );
  });

  it('refuses a URL whose password the clients could not decode, without echoing it', () => {
    const url = 'redis://:p%zzsecret@127.0.0.1:6379';
    let message = '';
    try {
      loadAppConfig({ SECRETS_KEY: SECRET, REDIS_URL: url, DATABASE_URL: 'postgres://app:100%@db/voice_agent' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('REDIS_URL has a user or password whose percent-escapes do not decode');
    expect(message).toContain('DATABASE_URL has a user or password whose percent-escapes do not decode');
    expect(message).not.toContain('secret');
    expect(loadAppConfig({ SECRETS_KEY: SECRET, REDIS_URL: 'redis://:p%25w@127.0.0.1:6379' }).redisUrl).toBe('redis://:p%25w@127.0.0.1:6379');
  });

  it('warns of the public all-zero secrets key on a loopback PUBLIC_BASE_URL, and of nothing for a key of ones own', () => {
    const local = { AGENT_RUNTIME_URL: 'wss://agents.example.com/media' };
    expect(configWarnings(loadAppConfig({ ...local, SECRETS_KEY: '0'.repeat(64) }))).toEqual([
      expect.stringMatching(/^SECRETS_KEY is the public all-zero development key/),
      expect.stringMatching(/^PUBLIC_BASE_URL is http:\/\/localhost:3000, a loopback address/),
    ]);
    const reachable = { PUBLIC_BASE_URL: 'https://voice.example.com', AGENT_RUNTIME_URL: 'wss://agents.example.com/media' };
    expect(configWarnings(loadAppConfig({ ...reachable, SECRETS_KEY: SECRET }))).toEqual([]);
  });

  it('reads the key from SECRETS_KEY_FILE when SECRETS_KEY is unset or empty, and says which file cannot be read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'va-secrets-'));
    try {
      const file = join(dir, 'secrets.key');
      writeFileSync(file, `${SECRET}\n`);
      expect(loadAppConfig({ SECRETS_KEY_FILE: file }).secretsKey).toEqual(Buffer.from(SECRET, 'hex'));
      expect(loadAppConfig({ SECRETS_KEY: '', SECRETS_KEY_FILE: file }).secretsKey).toEqual(Buffer.from(SECRET, 'hex'));
      // SECRETS_KEY itself, when set, is the key.
      const other = randomBytes(32).toString('hex');
      expect(loadAppConfig({ SECRETS_KEY: other, SECRETS_KEY_FILE: file }).secretsKey).toEqual(Buffer.from(other, 'hex'));

      const missing = join(dir, 'missing.key');
      expect(() => loadAppConfig({ SECRETS_KEY_FILE: missing })).toThrow(`SECRETS_KEY_FILE (${missing}) cannot be read (ENOENT)`);
      writeFileSync(file, 'a passphrase, not a key');
      const refused = (() => {
        try {
          loadAppConfig({ SECRETS_KEY_FILE: file });
        } catch (error) {
          return (error as ConfigError).problems;
        }
      })();
      expect(refused).toEqual([`SECRETS_KEY_FILE (${file}) must be 32 bytes written as 64 hex characters or as base64 (openssl rand -hex 32)`]);
      // An empty file (a crash while it was being made) is named as the file, not as a key never given.
      writeFileSync(file, '');
      expect(() => loadAppConfig({ SECRETS_KEY_FILE: file })).toThrow(`SECRETS_KEY_FILE (${file}) must be 32 bytes`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('spells PUBLIC_BASE_URL one way, as carriers are given it and as webhook signatures are checked against it', () => {
    const key = randomBytes(32).toString('hex');
    const base = (url: string) => loadAppConfig({ SECRETS_KEY: key, PUBLIC_BASE_URL: url }).publicBaseUrl;
    expect(base('https://Voice.Example.COM:443/')).toBe('https://voice.example.com');
    expect(base('http://voice.example.com:80/calls//')).toBe('http://voice.example.com/calls');
    expect(base('https://voice.example.com:8443/calls')).toBe('https://voice.example.com:8443/calls');
    expect(() => base('https://voice.example.com/?via=lb')).toThrow(
      expect.objectContaining({ problems: ['PUBLIC_BASE_URL must not have a query or a fragment (got "?via=lb")'] }),
    );
  });

  it('refuses the public all-zero secrets key with a PUBLIC_BASE_URL others reach, as hex or as base64', () => {
    for (const zero of ['0'.repeat(64), Buffer.alloc(32).toString('base64')]) {
      for (const elsewhere of ['https://voice.example.com', 'http://10.0.0.5:3000']) {
        const problems = (() => {
          try {
            loadAppConfig({ SECRETS_KEY: zero, PUBLIC_BASE_URL: elsewhere });
            return [];
          } catch (error) {
            return (error as ConfigError).problems;
          }
        })();
        expect(problems).toEqual([expect.stringMatching(/^SECRETS_KEY is the public all-zero development key, and PUBLIC_BASE_URL .* is not this machine/)]);
      }
    }
    // A key missing or malformed is said once, as such.
    expect(() => loadAppConfig({ PUBLIC_BASE_URL: 'https://voice.example.com' })).toThrow(/SECRETS_KEY is required/);
    // A PUBLIC_BASE_URL that is no URL is named among the problems, not a crash of the check.
    expect(() => loadAppConfig({ SECRETS_KEY: '0'.repeat(64), PUBLIC_BASE_URL: 'voice.example.com' })).toThrow(
      expect.objectContaining({ name: 'ConfigError', problems: expect.arrayContaining(['PUBLIC_BASE_URL must be a URL']) }),
    );
  });

  it('warns when the callbacks or the media stream a carrier is given point at this machine', () => {
    // The defaults: fine for the sandbox on one machine, unreachable for any real carrier.
    expect(configWarnings(loadAppConfig({ SECRETS_KEY: SECRET }))).toEqual([
      expect.stringMatching(/^PUBLIC_BASE_URL is http:\/\/localhost:3000, a loopback address/),
      expect.stringMatching(/^AGENT_RUNTIME_URL is ws:\/\/127\.0\.0\.1:8090\/media, a loopback address/),
    ]);
    for (const loopback of ['http://127.0.0.5:8080', 'http://[::1]:3000', 'http://api.localhost', 'http://LOCALHOST']) {
      const warnings = configWarnings(loadAppConfig({ SECRETS_KEY: SECRET, PUBLIC_BASE_URL: loopback, AGENT_RUNTIME_URL: 'wss://a.example.com' }));
      expect({ loopback, warnings }).toEqual({ loopback, warnings: [expect.stringMatching(/^PUBLIC_BASE_URL is .* a loopback address/)] });
    }
    // A private address or a name of the operator's own network may be reachable (a carrier's tunnel, a test rig).
    for (const elsewhere of ['http://10.0.0.5:3000', 'http://api:3000', 'https://127.example.com']) {
      expect(configWarnings(loadAppConfig({ SECRETS_KEY: SECRET, PUBLIC_BASE_URL: elsewhere, AGENT_RUNTIME_URL: 'wss://a.example.com' }))).toEqual([]);
    }
  });

  it('warns of an unencrypted AGENT_RUNTIME_URL off this machine, which Twilio does not stream to', () => {
    const reachable = { SECRETS_KEY: SECRET, PUBLIC_BASE_URL: 'https://voice.example.com' };
    expect(configWarnings(loadAppConfig({ ...reachable, AGENT_RUNTIME_URL: 'ws://agents.example.com/media' }))).toEqual([
      expect.stringMatching(/^AGENT_RUNTIME_URL is ws:\/\/agents\.example\.com\/media, unencrypted: Twilio streams calls to wss:\/\/ only/),
    ]);
    expect(configWarnings(loadAppConfig({ ...reachable, AGENT_RUNTIME_URL: 'wss://agents.example.com/media' }))).toEqual([]);
  });

  it('reads the private networks carrier storage may resolve to as CIDRs, and refuses anything else', () => {
    expect(loadAppConfig({ SECRETS_KEY: SECRET }).carrierStorageNetworks).toEqual([]);
    expect(loadAppConfig({ SECRETS_KEY: SECRET, CARRIER_STORAGE_NETWORKS: ' 10.20.0.0/16, fd00:ec2::/32 ' }).carrierStorageNetworks).toEqual([
      { address: '10.20.0.0', prefix: 16, family: 'ipv4' },
      { address: 'fd00:ec2::', prefix: 32, family: 'ipv6' },
    ]);
    for (const wrong of ['10.20.0.0', '10.20.0.0/33', 'vpce.example/16', '10.0.0.0/8/1', 'fd00::/129']) {
      expect(() => loadAppConfig({ SECRETS_KEY: SECRET, CARRIER_STORAGE_NETWORKS: wrong })).toThrow(`(got "${wrong}")`);
    }
  });

  it('never echoes the secrets key in its error', () => {
    const secret = 'not-a-valid-key-but-secret-anyway';
    expect(() => loadAppConfig({ SECRETS_KEY: secret })).toThrow(ConfigError);
    try {
      loadAppConfig({ SECRETS_KEY: secret });
    } catch (error) {
      expect((error as Error).message).not.toContain(secret);
    }
  });

  it('requires a secrets key', () => {
    expect(() => loadAppConfig({})).toThrow(/SECRETS_KEY is required/);
  });

  it('strips a trailing slash from PUBLIC_BASE_URL', () => {
    expect(loadAppConfig({ SECRETS_KEY: SECRET, PUBLIC_BASE_URL: 'https://calls.example.com/' }).publicBaseUrl).toBe(
      'https://calls.example.com',
    );
  });

  it('takes a Redis database only as a number after the port, which every client reads alike', () => {
    for (const url of ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379/', 'redis://127.0.0.1:6379/2', 'redis://[::1]:6379/0']) {
      expect(loadAppConfig({ SECRETS_KEY: SECRET, REDIS_URL: url }).redisUrl).toBe(url);
    }
    for (const url of ['redis://127.0.0.1:6379/1/', 'redis://127.0.0.1:6379/one', 'redis://127.0.0.1:6379/1/2']) {
      expect(() => loadAppConfig({ SECRETS_KEY: SECRET, REDIS_URL: url })).toThrow(/REDIS_URL must name its database as a number/);
    }
  });
});
