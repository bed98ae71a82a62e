import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { ArtifactKind, ARTIFACT_KINDS } from './artifact-storage';

export interface DownloadGrant {
  runId: number;
  artifact: ArtifactKind;
  /** Unix seconds. */
  expiresAt: number;
}

export type DownloadTokenCheck =
  | { ok: true; grant: DownloadGrant }
  | { ok: false; reason: 'invalid' | 'expired' };

/**
 * Stateless signed download tokens: `<payload>.<HMAC-SHA256>` in base64url.
 * Anyone holding one may download that one artifact until it expires; no
 * server state is needed, so every replica honours every token.
 */
export class DownloadTokens {
  private readonly key: Buffer;

  constructor(secretsKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'artifact-download-tokens', 32));
  }

  sign(grant: DownloadGrant): string {
    const payload = Buffer.from(JSON.stringify({ r: grant.runId, a: grant.artifact, e: grant.expiresAt })).toString(
      'base64url',
    );
    return `${payload}.${this.mac(payload)}`;
  }

  verify(token: string, nowSeconds = Math.floor(Date.now() / 1000)): DownloadTokenCheck {
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined) return { ok: false, reason: 'invalid' };
    const expected = Buffer.from(this.mac(payload), 'utf8');
    const given = Buffer.from(signature, 'utf8');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'invalid' };
    let parsed: { r?: unknown; a?: unknown; e?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'invalid' };
    }
    if (
      !Number.isInteger(parsed.r) ||
      !ARTIFACT_KINDS.includes(parsed.a as ArtifactKind) ||
      !Number.isInteger(parsed.e)
    ) {
      return { ok: false, reason: 'invalid' };
    }
    const grant: DownloadGrant = { runId: parsed.r as number, artifact: parsed.a as ArtifactKind, expiresAt: parsed.e as number };
    if (grant.expiresAt <= nowSeconds) return { ok: false, reason: 'expired' };
    return { ok: true, grant };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
