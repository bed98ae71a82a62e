import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { createRootLogger, urlForLog } from './create-root-logger';

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

describe('the root logger under Fastify', () => {
  it('writes request lines without the tokens their URLs carry', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
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
