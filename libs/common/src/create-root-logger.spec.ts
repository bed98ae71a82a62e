import { Writable } from 'node:stream';
import Fastify from 'fastify';
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
});
