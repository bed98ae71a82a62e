import { BlockList, isIP } from 'node:net';
import { Agent, fetch } from 'undici';
import type { Network } from '@app/config';
import { CarrierError } from './carrier-error';
import { AddressNotPublic, isConnectableAddress, networksOf, publicAddressLookup } from './public-address';

/** Requests to a carrier's API give up after this long; the outcome of a dial is then unknown. */
export const CARRIER_REQUEST_TIMEOUT_MS = 15_000;
/**
 * A recording's download, redirects and body included, gives up after this
 * long: a long call's file runs to tens of megabytes (an hour of 8 kHz WAV
 * is about 58 MB, and `MAX_RECORDING_BYTES` allows 100 MiB), so it gets
 * far more than an API request's 15 s, which it would miss on every retry.
 */
export const CARRIER_DOWNLOAD_TIMEOUT_MS = 120_000;
/** No recording is read past this (the agent's own uploads have the same limit). */
export const MAX_RECORDING_BYTES = 100 * 1024 * 1024;
/**
 * No answer of a carrier's API (a dial, a look-up, a page of calls) is read
 * past this: those are kilobytes, and a dialer placing many calls at once
 * must not hold a recording's 100 MiB for each of them.
 */
export const MAX_CARRIER_API_BODY_BYTES = 1024 * 1024;

/** What `readBody` reads: a fetch Response, Node's own or undici's. */
interface StreamedAnswer {
  headers: { get(name: string): string | null };
  body: ReadableStream<Uint8Array> | null;
}

/** An answer longer than `readBody` reads. */
export class BodyOverLimit extends Error {
  constructor(
    message: string,
    readonly maxBytes: number,
  ) {
    super(message);
    this.name = 'BodyOverLimit';
  }
}

/** A response's body, read until `maxBytes` and refused past it (a stream without end must not exhaust memory). */
export async function readBody(response: StreamedAnswer, maxBytes = MAX_CARRIER_API_BODY_BYTES): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new BodyOverLimit(`the answer is ${declared} bytes, over the ${maxBytes}-byte limit`, maxBytes);
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  // The chunks are kept as views (no copy) and copied once, into the body: a large recording is held twice at most.
  const chunks: Buffer[] = [];
  let total = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    total += next.value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyOverLimit(`the answer is over the ${maxBytes}-byte limit`, maxBytes);
    }
    chunks.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
  }
  return Buffer.concat(chunks, total);
}

export interface CarrierHttpRequest {
  method: string;
  /** The whole Authorization header: each carrier builds its own (Basic, Bearer, a signed JWT). */
  authorization?: string;
  /** Sent as JSON (Plivo, Telnyx, Vonage). */
  json?: unknown;
  /** Sent as `application/x-www-form-urlencoded` (Twilio). */
  form?: URLSearchParams;
  timeoutMs: number;
  /**
   * For downloads (GET), which carriers redirect to their storage: whether a
   * redirect to `target` is followed. Every hop is checked, so a host trusted
   * for the first request cannot hand the dialer on to an internal address,
   * and the Authorization header stays with the first request's origin.
   * Without it (API calls, which never redirect) a redirect is the answer.
   * It is what makes a request a download: its body is read up to
   * `MAX_RECORDING_BYTES`, an API call's up to `MAX_CARRIER_API_BODY_BYTES`.
   */
  followRedirect?: (target: URL) => boolean;
  /**
   * For downloads: the origins connected to wherever they point, the
   * carrier API's configured base (the operator chose it; in tests a local
   * fake). Every other host a download reaches, its first request
   * included, is connected to only if its name resolves to public
   * addresses alone, checked as the connection is made: a carrier's
   * storage name cannot lead the dialer to a private, loopback or
   * link-local address, nor can a name re-pointed after the host check.
   */
  trustedOrigins?: readonly string[];
}

export interface CarrierHttpResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null when the body was empty or not JSON. */
  json: unknown;
  bytes: Buffer;
}

/**
 * A request that got no HTTP answer. `reachedCarrier` is false only when the
 * connection was never made (refused, unknown host), so the carrier cannot
 * have acted on it; after a timeout or a reset it may have. Each carrier
 * turns this into its own classification.
 */
export class CarrierRequestFailed extends Error {
  constructor(
    message: string,
    readonly reachedCarrier: boolean,
    options: { cause: unknown },
  ) {
    super(message, options);
    this.name = 'CarrierRequestFailed';
  }
}

/**
 * A download the dialer would not make: a redirect to a host it does not
 * trust, too many redirects, a host that does not resolve to a public
 * address, or a file past the size it keeps. Trying again will most likely
 * be refused the same way.
 */
export class DownloadRefused extends Error {
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = 'DownloadRefused';
  }
}

/** Private networks carrier storage may resolve to besides public addresses (CARRIER_STORAGE_NETWORKS). */
let storageNetworks: BlockList | undefined;
/** Connections of downloads from hosts not trusted by configuration: public addresses (and `storageNetworks`) only. */
let publicOnlyAgent = new Agent({ connect: { lookup: publicAddressLookup() } });

/**
 * Names the private networks (CIDRs) a carrier's storage host may resolve
 * to and still be connected to, such as the addresses of an S3 interface
 * endpoint inside the operator's own network; none by default. Set at start
 * (the telephony module does, from CARRIER_STORAGE_NETWORKS).
 */
export function allowCarrierStorageNetworks(networks: readonly Network[]): void {
  storageNetworks = networks.length > 0 ? networksOf(networks) : undefined;
  const previous = publicOnlyAgent;
  publicOnlyAgent = new Agent({ connect: { lookup: publicAddressLookup(undefined, storageNetworks) } });
  void previous.close().catch(() => undefined);
}

/**
 * Socket errors of a request that never connected, so nothing was sent: refused, no such host, no route, and
 * undici's connect timeout (10 s, within our request timeout), which covers the TLS handshake: a carrier
 * whose address drops every packet (a firewall, a failed NAT gateway) fails so.
 */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Redirects a download follows at most (fetch's own limit is 20). */
export const MAX_REDIRECTS = 5;

/**
 * An https URL naming a host by its name, not a local one: where a trusted
 * carrier's redirect may lead (its storage). IP literals and local names are
 * refused, so a redirect cannot reach a metadata endpoint or an internal
 * service however the first host was persuaded to send it.
 */
export function isPublicHttpsUrl(target: URL): boolean {
  if (target.protocol !== 'https:' || target.port !== '') return false;
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host) !== 0 || !host.includes('.')) return false;
  return !/(^|\.)(localhost|local|internal|localdomain|home\.arpa)\.?$/.test(host);
}

/**
 * A carrier's own hosts for a download: its configured API's origin, or an
 * https URL on the default port whose host name `hosts` matches.
 */
export function carrierHostCheck(apiBase: string, hosts: RegExp): (target: URL) => boolean {
  const origin = new URL(apiBase).origin;
  return (target) => target.origin === origin || (target.protocol === 'https:' && target.port === '' && hosts.test(target.hostname));
}

/**
 * One request to a carrier: JSON accepted, a timeout on every request, the
 * body read whole. `carrier` names it in the failure message.
 */
export async function carrierHttp(carrier: string, url: string, init: CarrierHttpRequest): Promise<CarrierHttpResponse> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.authorization) headers.authorization = init.authorization;
  if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
  else if (init.json !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  let bytes: Buffer;
  try {
    response = await send(new URL(url), init, headers, AbortSignal.timeout(init.timeoutMs));
    bytes = await readBody(response, init.followRedirect ? MAX_RECORDING_BYTES : MAX_CARRIER_API_BODY_BYTES);
  } catch (error) {
    if (error instanceof DownloadRefused) throw error;
    if (error instanceof BodyOverLimit && init.followRedirect) {
      // A file past the limit (a recording of a call of hours) is as long the next time: not fetched again and again.
      throw new DownloadRefused(`the file is over the ${Math.round(error.maxBytes / 1024 / 1024)} MiB a recording may be`, { cause: error });
    }
    const notPublic = causeOfType(error, AddressNotPublic);
    if (notPublic) throw new DownloadRefused(notPublic.message, { cause: notPublic });
    // An API answer past its limit too is a failed request the carrier got (reachedCarrier): a dial's outcome is unknown.
    const codes = socketErrorCodes(error);
    const timedOut = (error as Error)?.name === 'TimeoutError';
    const what = timedOut ? `no answer within ${init.timeoutMs} ms` : codes.length > 0 ? codes.join(', ') : ((error as Error)?.message ?? String(error));
    throw new CarrierRequestFailed(`${carrier} request ${init.method} ${pathForMessage(new URL(url))} failed: ${what}`, !neverConnected(error), {
      cause: error,
    });
  }
  return { status: response.status, headers: response.headers, json: parseJson(bytes), bytes };
}

/** The request, and each redirect `init.followRedirect` allows, within one timeout. */
async function send(first: URL, init: CarrierHttpRequest, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
  const body = init.form ? init.form.toString() : init.json !== undefined ? JSON.stringify(init.json) : undefined;
  let target = first;
  for (let redirects = 0; ; redirects++) {
    const sameOrigin = target.origin === first.origin;
    const { authorization: _leftBehind, ...elsewhere } = headers;
    const response = await fetch(target, {
      method: init.method,
      headers: sameOrigin ? headers : elsewhere,
      body,
      signal,
      redirect: 'manual',
      dispatcher: init.followRedirect && !init.trustedOrigins?.includes(target.origin) ? publicOnly(target) : undefined,
    });
    const location = REDIRECTS.has(response.status) ? response.headers.get('location') : null;
    if (!init.followRedirect || location === null) return response;
    await response.body?.cancel();
    const next = new URL(location, target);
    if (redirects === MAX_REDIRECTS) throw new DownloadRefused(`${first.origin} redirected more than ${MAX_REDIRECTS} times`);
    if (!init.followRedirect(next)) throw new DownloadRefused(`refused to follow a redirect to ${next.protocol}//${next.host}`);
    target = next;
  }
}

/**
 * The public-only connections for `target`; an IP literal, which no lookup
 * sees, is checked here. (Which schemes and ports a download may use is the
 * carriers' host checks' to say: `carrierHostCheck`, `isPublicHttpsUrl`.)
 */
function publicOnly(target: URL): Agent {
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0 && !isConnectableAddress(host, storageNetworks)) throw new AddressNotPublic(host);
  return publicOnlyAgent;
}

/**
 * The first error of `type` in `error`'s chain of causes, itself included
 * (undici wraps a connection's error, sometimes twice; carriers wrap
 * `carrierHttp`'s), or null.
 */
export function causeOfType<T extends Error>(error: unknown, type: abstract new (...args: never[]) => T): T | null {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (current instanceof type) return current;
    current = current.cause;
  }
  return null;
}

export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * A `Retry-After` header as milliseconds from `nowMs`, when it holds one: its
 * delta-seconds (digits only: not "0x10" or "1e3", which Number would take)
 * or an HTTP date, in any of its three forms, each of which starts with the
 * day's name (a date passed is 0; Date.parse alone would read "-5" as a date
 * in 2001). Anything else is as if none were given.
 */
export function retryAfterMs(header: string | null, nowMs = Date.now()): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(value)) return undefined;
  // asctime's form names no zone: it is GMT, as the other two say.
  const at = Date.parse(/GMT$/.test(value) ? value : `${value} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * A request's path as its failure message names it, which reaches the run's
 * log (customers read it): without the account a path names (Twilio's
 * `/Accounts/{AccountSid}`, Plivo's `/Account/{auth_id}`, half of the
 * credentials' pair), and without its query.
 */
export function pathForMessage(url: URL): string {
  return withoutAccounts(url.pathname);
}

/**
 * `text` (a carrier's own error message, say, which may quote the path it
 * was asked: Twilio's 404 does) without the account ids its API paths hold.
 */
export function withoutAccounts(text: string): string {
  return text.replace(/\/(Accounts?)\/[^/\s]+/g, '/$1/…');
}

function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return null;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
}

/** A socket's error as fetch's cause holds it, or an AggregateError of several (`addressErrors`). */
interface SocketError {
  code?: unknown;
  errors?: unknown;
}

/** The socket's error under what fetch threw: undici wraps it, TypeError('fetch failed', { cause }). */
function socketErrorOf(error: unknown): SocketError | undefined {
  return (error as { cause?: SocketError } | null)?.cause;
}

/**
 * Each address's error when a connection was tried on several and failed on
 * each (Node's autoSelectFamily, "happy eyeballs", on by default: a host's
 * IPv6 address, then its IPv4 one), else null. The socket's error is then an
 * AggregateError whose own `code` is only the first address's.
 */
function addressErrors(socket: SocketError | undefined): SocketError[] | null {
  return Array.isArray(socket?.errors) && socket.errors.length > 0 ? (socket.errors as SocketError[]) : null;
}

/** The socket error codes under what fetch threw, each once: every address's, for a connection tried on several. */
function socketErrorCodes(error: unknown): string[] {
  const socket = socketErrorOf(error);
  const codes = (addressErrors(socket) ?? [socket]).map((each) => each?.code);
  return [...new Set(codes.filter((code): code is string => typeof code === 'string'))];
}

/**
 * Whether what fetch threw failed before a connection was made, so nothing
 * was sent. A connection tried on several addresses made none when each
 * failed so or was given up after its attempt's timeout (ETIMEDOUT, and the
 * next address tried). A lone ETIMEDOUT is not among them: it may come from
 * a connection made, whose request was sent.
 */
function neverConnected(error: unknown): boolean {
  const socket = socketErrorOf(error);
  const addresses = addressErrors(socket);
  if (!addresses) return NEVER_CONNECTED.has(socket?.code as string);
  return addresses.every((each) => NEVER_CONNECTED.has(each?.code as string) || each?.code === 'ETIMEDOUT');
}

/**
 * A dial whose request never connected is a `CarrierError` that says no call
 * was placed; null for any other error (a timeout or a reset: the carrier may
 * have placed the call, and the dialer asks before dialing again).
 */
export function neverConnectedDialError(error: unknown): CarrierError | null {
  if (!(error instanceof CarrierRequestFailed) || error.reachedCarrier) return null;
  return new CarrierError(`${error.message}; no connection was made, so no call was placed`, {
    reason: 'carrier_unreachable',
    permanent: false,
    notProcessed: true,
  });
}
