import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export interface AgentSessionGrant {
  runId: number;
  /** Unix seconds. */
  expiresAt: number;
}

export type AgentSessionCheck = { ok: true; grant: AgentSessionGrant } | { ok: false; reason: 'invalid' | 'expired' };

/**
 * Short-lived signed tokens that let the voice-agent runtime act for one run:
 * `<payload>.<HMAC-SHA256>` in base64url, under a key derived from
 * SECRETS_KEY for this purpose only. The API also refuses a token once its
 * run has ended, so a leaked token cannot be replayed later.
 */
export class AgentSessionTokens {
  private readonly key: Buffer;

  constructor(secretsKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'agent-session-tokens', 32));
  }

  sign(grant: AgentSessionGrant): string {
    const payload = Buffer.from(JSON.stringify({ s: grant.runId, e: grant.expiresAt })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  verify(token: string, nowSeconds = Math.floor(Date.now() / 1000)): AgentSessionCheck {
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined) return { ok: false, reason: 'invalid' };
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'invalid' };
    let parsed: { s?: unknown; e?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'invalid' };
    }
    if (!Number.isInteger(parsed.s) || !Number.isInteger(parsed.e)) return { ok: false, reason: 'invalid' };
    const grant = { runId: parsed.s as number, expiresAt: parsed.e as number };
    if (grant.expiresAt <= nowSeconds) return { ok: false, reason: 'expired' };
    return { ok: true, grant };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }
}
