import { DownloadTokens } from './download-token';

describe('DownloadTokens', () => {
  const tokens = new DownloadTokens(Buffer.alloc(32, 7));
  const grant = { runId: 42, artifact: 'recording' as const, expiresAt: 2_000_000_000 };

  it('verifies a token it signed', () => {
    expect(tokens.verify(tokens.sign(grant), 1_900_000_000)).toEqual({ ok: true, grant });
  });

  it('reports an expired token as expired', () => {
    expect(tokens.verify(tokens.sign(grant), 2_000_000_000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('rejects a token whose payload was changed', () => {
    const [, signature] = tokens.sign(grant).split('.');
    const forged = Buffer.from(JSON.stringify({ r: 43, a: 'recording', e: 2_000_000_000 })).toString('base64url');
    expect(tokens.verify(`${forged}.${signature}`, 1_900_000_000)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('rejects a token signed with another key', () => {
    const other = new DownloadTokens(Buffer.alloc(32, 8));
    expect(tokens.verify(other.sign(grant), 1_900_000_000)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('rejects garbage', () => {
    for (const garbage of ['', '.', 'abc', 'a.b.c', '%%%.%%%']) {
      expect(tokens.verify(garbage)).toEqual({ ok: false, reason: 'invalid' });
    }
  });
});
