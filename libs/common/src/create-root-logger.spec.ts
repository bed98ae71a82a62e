import { Writable } from 'node:stream';
import Fastify from 'fastify';
import Redis from 'ioredis';
import { createRootLogger, urlForLog } from './create-root-logger';

/** A log destination that keeps what is written. */
function captured(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, sink };
}

describe('urlForLog', () => {
  it("hides a download link's payload and signature", () => {
    expect(urlForLog('/api/v1/downloads/eyJydW4iOjF9/c2lnbmF0dXJl')).toBe('/api/v1/downloads/[redacted]');
  });

  it("hides an agent session's token but keeps the rest of the path", () => {
    expect(urlForLog('/api/v1/agent-sessions/tok.en-123/events')).toBe('/api/v1/agent-sessions/[redacted]/events');
  });

  it('hides the tokens of a URL that spells its route with percent escapes, as the router reads it', () => {
    expect(urlForLog('/api/v1/%64ownloads/eyJydW4iOjF9/c2lnbmF0dXJl')).toBe('/api/v1/downloads/[redacted]');
    expect(urlForLog('/api/v1/agent-session%73/tok.en-123/events')).toBe('/api/v1/agent-sessions/[redacted]/events');
    expect(urlForLog('/api/v1/%44OWNLOADS/eyJydW4iOjF9/c2lnbmF0dXJl')).toBe('/api/v1/DOWNLOADS/[redacted]');
    expect(urlForLog('/media?%74oken=abc&call=1')).toBe('/media?token=[redacted]&call=1');
  });

  it('leaves every other escape as it came, a malformed one included', () => {
    expect(urlForLog('/api/v1/workflow/3/runs?q=%E9%2F%25%20')).toBe('/api/v1/workflow/3/runs?q=%E9%2F%25%20');
    expect(urlForLog('/api/v1/downloads/secret-payload%zz/secret-signature')).toBe('/api/v1/downloads/[redacted]');
    expect(urlForLog('/api/v1/agent-sessions/secret%E0%A4%A/events')).toBe('/api/v1/agent-sessions/[redacted]/events');
  });

  it('hides a token parameter after a #, where the router starts the query too', () => {
    expect(urlForLog('/media#token=abc&call=1')).toBe('/media#token=[redacted]&call=1');
  });

  it('hides token query parameters and leaves other URLs as they are', () => {
    expect(urlForLog('/media?session_token=abc&call=1')).toBe('/media?session_token=[redacted]&call=1');
    expect(urlForLog('/api/v1/workflow/3/runs/42')).toBe('/api/v1/workflow/3/runs/42');
  });
});

describe('the root logger', () => {
  it("writes a failed query's SQL but not the values bound to it", () => {
    const { lines, sink } = captured();
    const failed = Object.assign(new Error('invalid input syntax for type json'), {
      query: 'INSERT INTO workflow_runs (initial_context) VALUES ($1)',
      parameters: ['{"patient":"Ada Lovelace"}'],
    });
    createRootLogger('test', 'info', sink).error({ err: failed }, 'request failed');

    const logged = lines.join('');
    expect(logged).toContain('INSERT INTO workflow_runs');
    expect(logged).toContain('invalid input syntax for type json');
    expect(logged).not.toContain('Ada Lovelace');
  });

  it('writes the name of a Redis command that failed, not its arguments (an AUTH password, a job\'s data)', async () => {
    const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      // The local Redis has no password: it refuses the AUTH, and ioredis' error carries the command sent.
      const refused = await redis.auth('not-the-password-8d1f').then(
        () => null,
        (error: unknown) => error as Error & { command?: { name: string; args: unknown[] } },
      );
      expect(refused?.command).toEqual({ name: 'auth', args: ['not-the-password-8d1f'] });
      const { lines, sink } = captured();
      createRootLogger('test', 'info', sink).error({ err: refused }, 'redis failed');
      const logged = JSON.parse(lines.join(''));
      expect(logged.err.command).toEqual({ name: 'auth' });
      expect(lines.join('')).not.toContain('not-the-password-8d1f');
      // The error itself is left as it was.
      expect(refused?.command?.args).toEqual(['not-the-password-8d1f']);
    } finally {
      redis.disconnect();
    }
  });

  it("writes neither the detail nor the context Postgres gives of a value it refused, nor its driver error's", () => {
    const { lines, sink } = captured();
    const driverError = Object.assign(new Error('duplicate key value violates unique constraint "idempotency_keys_pkey"'), {
      code: '23505',
      detail: 'Key (organization_id, key)=(7, order-of-Ada-Lovelace) already exists.',
      where: 'JSON data, line 1: {"patient":"Ada Lovelace',
    });
    const failed = Object.assign(new Error(driverError.message), {
      query: 'INSERT INTO idempotency_keys (organization_id, key) VALUES ($1, $2)',
      parameters: [7, 'order-of-Ada-Lovelace'],
      code: '23505',
      detail: driverError.detail,
      where: driverError.where,
      driverError,
    });
    const context = { reason: 'kept as given', detail: 'not a database value' };
    createRootLogger('test', 'info', sink).warn({ err: Object.assign(failed, { context }) }, 'a value the database cannot store');

    const logged = lines.join('');
    expect(logged).toContain('INSERT INTO idempotency_keys');
    expect(logged).toContain('23505');
    expect(logged).toContain('idempotency_keys_pkey');
    expect(logged).not.toContain('Lovelace');
    // An object of the error's own that is not an error is written as it is, and left unchanged.
    expect(logged).toContain('not a database value');
    expect(context.detail).toBe('not a database value');
    expect(failed.detail).toContain('Lovelace');
  });

  it('writes what is not an error as it was given, without changing it or failing on a cycle', () => {
    const { lines, sink } = captured();
    const notAnError: Record<string, unknown> = { code: 'E_SOMETHING', response: { detail: 'kept', where: 'kept too' } };
    notAnError.self = notAnError;
    const logger = createRootLogger('test', 'info', sink);
    expect(() => logger.warn({ err: notAnError }, 'a failure that threw no Error')).not.toThrow();
    expect(notAnError.response).toEqual({ detail: 'kept', where: 'kept too' });
    expect(lines.join('')).toContain('E_SOMETHING');
  });
});

describe('the root logger under Fastify', () => {
  it('writes request lines without the tokens their URLs carry', async () => {
    const { lines, sink } = captured();
    const app = Fastify({ loggerInstance: createRootLogger('test', 'info', sink) });
    app.get('/api/v1/downloads/:payload/:signature', async () => ({ ok: true }));
    await app.inject({ method: 'GET', url: '/api/v1/downloads/secret-payload/secret-signature' });
    await app.close();

    const logged = lines.join('');
    expect(logged).toContain('/api/v1/downloads/[redacted]');
    expect(logged).not.toContain('secret-payload');
    expect(logged).not.toContain('secret-signature');
  });

  it('writes no token of a URL whose route is spelt with percent escapes, which the router still routes', async () => {
    const { lines, sink } = captured();
    const app = Fastify({ loggerInstance: createRootLogger('test', 'info', sink) });
    app.get('/api/v1/downloads/:payload/:signature', async () => ({ ok: true }));
    app.get('/api/v1/agent-sessions/:token/events', async () => ({ ok: true }));
    const download = await app.inject({ method: 'GET', url: '/api/v1/%64ownloads/secret-payload/secret-signature' });
    const session = await app.inject({ method: 'GET', url: '/api/v1/agent-session%73/secret-token/events' });
    await app.close();

    expect([download.statusCode, session.statusCode]).toEqual([200, 200]);
    const logged = lines.join('');
    expect(logged).toContain('/api/v1/downloads/[redacted]');
    expect(logged).toContain('/api/v1/agent-sessions/[redacted]/events');
    for (const secret of ['secret-payload', 'secret-signature', 'secret-token']) expect(logged).not.toContain(secret);
  });
});
