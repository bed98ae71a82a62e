import { IncomingMessage } from 'node:http';
import { LoopbackHttpFake, LoopbackWebhook, LoopbackWebhookAnswer } from './loopback-http-fake';

/** Webhook fields, as an object or as ordered pairs (a name may repeat). */
export type FormFields = Record<string, string> | ReadonlyArray<readonly [string, string]>;

/** A webhook the fake sent, and what our side answered. */
export interface SentFormWebhook {
  url: string;
  fields: Record<string, string>;
  status: number;
  body: string;
}

/**
 * What the Twilio and Plivo fakes share: an API behind HTTP Basic auth, and
 * webhooks posted as form fields, signed over the URL and the fields.
 */
export abstract class FormLoopbackFake<Call, Failure> extends LoopbackHttpFake {
  /** The calls placed, by the carrier's id for them. */
  readonly calls = new Map<string, Call>();
  /** Every webhook this fake sent, with our service's answer. */
  readonly webhooks: SentFormWebhook[] = [];
  /** How the next REST requests fail, first first. */
  private readonly failures: Array<{ kind: Failure; anyRequest: boolean }> = [];

  /**
   * The next `times` REST requests fail this way (an error in the carrier's
   * shape, a reset, or no answer at all). A lost answer is a dial's unless
   * `anyRequest` says the next request of any kind loses it (a credentials check).
   */
  failNext(kind: Failure, times = 1, { anyRequest = false }: { anyRequest?: boolean } = {}): void {
    for (let i = 0; i < times; i += 1) this.failures.push({ kind, anyRequest });
  }

  /**
   * The failure a REST request takes, if any. A lost answer (a reset, no
   * answer) meant for a dial is a dial's: another request arriving first (a
   * recording fetched for an earlier test's call, under load) is served, not
   * made to take it.
   */
  protected takeFailure(isDial: boolean): Failure | undefined {
    const next = this.failures[0];
    if (!next) return undefined;
    if ((next.kind === 'reset' || next.kind === 'timeout') && !isDial && !next.anyRequest) return undefined;
    return this.failures.shift()!.kind;
  }

  call(id: string): Call {
    const call = this.calls.get(id);
    if (!call) throw new Error(`${this.fakeName} has no call ${id}`);
    return call;
  }

  lastCall(): Call {
    const calls = [...this.calls.values()];
    if (calls.length === 0) throw new Error(`${this.fakeName} has placed no call`);
    return calls[calls.length - 1];
  }

  /** A form-encoded webhook of `fields` with the carrier's headers (signatures among them); not sent. */
  protected formWebhook(url: string, fields: FormFields, headers: Record<string, string>): LoopbackWebhook {
    const rawBody = Buffer.from(new URLSearchParams(fieldPairs(fields)).toString(), 'utf8');
    return { method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, rawBody };
  }

  /** POSTs a webhook and keeps it, with our side's answer, in `webhooks`. */
  protected async deliverForm(request: LoopbackWebhook, fields: FormFields): Promise<LoopbackWebhookAnswer> {
    const result = await this.post(request, 15_000);
    this.webhooks.push({ url: request.url, fields: Object.fromEntries(fieldPairs(fields)), status: result.status, body: result.body });
    return result;
  }
}

export function fieldPairs(fields: FormFields): Array<[string, string]> {
  return Array.isArray(fields) ? fields.map(([name, value]) => [name, value]) : Object.entries(fields as Record<string, string>);
}

/** The user and password of an HTTP Basic Authorization header; null without one. */
export function basicCredentials(request: IncomingMessage): { user: string; password: string } | null {
  const header = request.headers.authorization ?? '';
  if (!header.startsWith('Basic ')) return null;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const separator = decoded.indexOf(':');
  return { user: decoded.slice(0, separator), password: decoded.slice(separator + 1) };
}
