import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CarrierError } from '../carrier-error';
import { CARRIER_DOWNLOAD_TIMEOUT_MS, carrierHostCheck, carrierHttp, CarrierHttpResponse, DownloadRefused } from '../carrier-http';
import { carrierNetworkFailure } from '../carrier-network-failure';
import { AnswerInstructions, CarrierWebhooks, ParsedWebhook, WebhookKind, WebhookRequest, WebhookRun } from '../carrier-webhooks';
import { malformedCredentialsCheck, refusedCredentialsCheck } from '../credentials-checks';
import { foundCall } from '../found-call';
import {
  CallArtifacts,
  CallLookup,
  CallReference,
  CredentialsCheck,
  PlaceCallRequest,
  PlaceCallResult,
  TelephonyProvider,
} from '../telephony-provider';
import { namedAccount, usableCredentials } from '../usable-credentials';
import { TelnyxApi, TelnyxResponse } from './telnyx-api';
import { provesAnswered, TelnyxLiveCall, telnyxLiveCallEvents } from './telnyx-call-state';
import { telnyxAnswerInstructions } from './telnyx-answer';
import { telnyxClientState } from './telnyx-client-state';
import { readTelnyxCredentials, telnyxCredentialProblems, TelnyxCredentials } from './telnyx-credentials';
import { telnyxDialBody, TelnyxPlaceCallRequest } from './telnyx-dial';
import { telnyxDialError, telnyxErrors } from './telnyx-errors';
import { parseTelnyxWebhook, telnyxOtherCall } from './telnyx-events';
import { TELNYX_SIGNATURE_HEADER, TELNYX_TIMESTAMP_HEADER, verifyTelnyxSignature } from './telnyx-signature';
import { telnyxSettingsProblems } from './telnyx-settings';

/**
 * Where Telnyx keeps recordings: its own hosts, and the pre-signed S3 links
 * its webhooks name (`bucket.s3.amazonaws.com`, `s3.region.amazonaws.com`,
 * `s3-region.amazonaws.com`, ...). Only S3's names under amazonaws.com:
 * anyone can put an endpoint of their own there (API Gateway, an instance),
 * and one that redirects would lead the dialer wherever it says.
 */
const TELNYX_RECORDING_HOSTS = /(^|\.)telnyx\.com$|^([a-z0-9][a-z0-9.-]*\.)?s3([.-][a-z0-9-]+)*\.amazonaws\.com$/;
const ACTIVE_CALLS_PAGE_SIZE = 250;
const ACTIVE_CALLS_MAX_PAGES = 20;

/**
 * Telnyx through Call Control v2 (`POST /v2/calls`), with the customer's API
 * key. The dial itself asks Telnyx to stream the answered call's audio to the
 * agent runtime, carries our run id as `client_state` and a `command_id` so
 * Telnyx drops a repeated dial. Webhooks are verified with the account's
 * Ed25519 public key.
 */
@Injectable()
export class TelnyxProvider implements TelephonyProvider, CarrierWebhooks {
  readonly name = 'telnyx';
  /** Its look-up says only whether a call is alive; the price comes on the `call.cost` webhook. */
  readonly pricesOnLookup = false;
  /** Call Control has no answer URL: the dial itself names the agent stream. */
  readonly streamsAtDial = true;
  readonly findsCallsByNumbers = false;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  validateCredentials(credentials: Record<string, unknown> | null): string[] {
    return telnyxCredentialProblems(credentials);
  }

  /** The account's webhook public key: Telnyx names no account in an API key, and one account signs all its calls' events. */
  accountOf(credentials: Record<string, unknown> | null): string | null {
    return namedAccount(credentials, 'public_key');
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return telnyxSettingsProblems(settings);
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const credentials = this.credentialsOrThrow(request.credentials);
    const stream = (request as TelnyxPlaceCallRequest).agentStream;
    if (!stream) {
      throw new CarrierError('Telnyx streams to the agent from the dial: the request carries no agent stream', {
        reason: 'agent_stream_missing',
        permanent: true,
        notProcessed: true,
      });
    }
    const response = await this.api(credentials).request('POST', '/v2/calls', telnyxDialBody(request, credentials, stream));
    if (response.status < 200 || response.status >= 300) throw telnyxDialError(response);
    const callControlId = (response.body as { data?: { call_control_id?: unknown } } | null)?.data?.call_control_id;
    if (typeof callControlId !== 'string' || !callControlId) {
      // Telnyx said yes but we cannot tell which call: the dialer must look it up rather than dial again.
      throw new Error(`Telnyx accepted the dial (${response.status}) without a call_control_id`);
    }
    return { providerCallId: callControlId };
  }

  /**
   * With a call control id: `GET /v2/calls/{id}` says whether the call is
   * alive and since when, not how it went (and Telnyx forgets it 10 minutes
   * after it ends): an alive call counts as ringing, or as answered once it
   * has outlived the ring timeout (`telnyxLiveCallEvents`), and an ended one
   * reports no event. Without one: the connection's active calls are
   * searched for our `client_state`; a call not among them may have ended or
   * never existed, which is `unknown`, never `not_found`.
   */
  async lookupCall(call: CallReference): Promise<CallLookup> {
    const credentials = this.credentialsOrThrow(call.credentials);
    return this.lookUp(this.api(credentials), credentials, call);
  }

  private async lookUp(api: TelnyxApi, credentials: TelnyxCredentials, call: CallReference): Promise<CallLookup> {
    if (!call.providerCallId) return this.findActiveCall(api, credentials, call);

    const response = await api.request('GET', `/v2/calls/${encodeURIComponent(call.providerCallId)}`);
    if (response.status === 404) return { kind: 'unknown' };
    if (response.status !== 200) throw this.failure('look up the call', response);
    const data = (response.body as { data?: TelnyxLiveCall & { is_alive?: unknown } } | null)?.data ?? {};
    return foundCall(call, this.name, call.providerCallId, data.is_alive === true ? telnyxLiveCallEvents(data, telnyxNow(response)) : []);
  }

  /**
   * Hangs up a call that may still be ringing. Telnyx's hang-up ends any
   * call, answered or not, so the call is looked up first and left alone
   * once it is known to be answered (alive past the ring timeout). One
   * answered within the last minute, whose `call.answered` has not reached
   * us, cannot be told from a ringing one and is hung up.
   */
  async hangup(call: CallReference): Promise<boolean> {
    const credentials = this.credentialsOrThrow(call.credentials);
    const api = this.api(credentials);
    const lookup = await this.lookUp(api, credentials, call);
    if (lookup.kind !== 'found' || !lookup.events.length || provesAnswered(lookup.events)) return false;
    return this.hangupById(api, lookup.providerCallId);
  }

  /** Ends the call whatever its state: an answering machine to hang up on, or the call of a run the reaper ended. */
  async endCall(call: CallReference): Promise<boolean> {
    const credentials = this.credentialsOrThrow(call.credentials);
    const api = this.api(credentials);
    let callControlId = call.providerCallId;
    if (!callControlId) {
      const found = await this.findActiveCall(api, credentials, call);
      if (found.kind !== 'found') return false;
      callControlId = found.providerCallId;
    }
    return this.hangupById(api, callControlId);
  }

  private async hangupById(api: TelnyxApi, callControlId: string): Promise<boolean> {
    const response = await api.request('POST', `/v2/calls/${encodeURIComponent(callControlId)}/actions/hangup`, {});
    if (response.status >= 200 && response.status < 300) return true;
    // Gone (404) or already ended (422, e.g. 90018): nothing left to hang up.
    if (response.status === 404 || response.status === 422) return false;
    throw this.failure('hang up the call', response);
  }

  async collectArtifacts(): Promise<CallArtifacts> {
    // The transcript comes from the agent runtime; Telnyx's recording through fetchRecording.
    return { transcript: [], recording: null };
  }

  /**
   * Asks Telnyx whether the credentials work by reading the Call Control
   * application they dial through (`GET /v2/call_control_applications/{id}`),
   * which proves the API key and the connection_id together. Throws when
   * Telnyx cannot be asked (refused connection, 429, 5xx).
   */
  async checkCredentials(credentials: Record<string, unknown> | null): Promise<CredentialsCheck> {
    const malformed = malformedCredentialsCheck(telnyxCredentialProblems(credentials));
    if (malformed) return malformed;
    const read = this.credentialsOrThrow(credentials);
    const response = await this.api(read).request('GET', `/v2/call_control_applications/${encodeURIComponent(read.connectionId)}`);
    if (response.status >= 200 && response.status < 300) return { ok: true };
    if (response.status === 401 || response.status === 403) {
      return refusedCredentialsCheck('Telnyx', ` (HTTP ${response.status})`);
    }
    if (response.status === 404) {
      // The key works; the connection_id names no Call Control application of this account.
      return {
        ok: false,
        reason: 'connection_not_found',
        message: `Telnyx has no Call Control application ${read.connectionId} for this API key`,
      };
    }
    throw new Error(`Telnyx answered HTTP ${response.status} while checking credentials`);
  }

  verifyWebhook(request: WebhookRequest, credentials: Record<string, unknown> | null, nowMs: number): void {
    const publicKey = readTelnyxCredentials(credentials)?.publicKey ?? null;
    verifyTelnyxSignature(request, publicKey, nowMs);
  }

  parseWebhook(_kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
    // Telnyx sends every event of a call to its webhook_url; the kind adds nothing.
    return parseTelnyxWebhook(request);
  }

  otherCallThan(_kind: WebhookKind, parsed: ParsedWebhook, run: WebhookRun): string | null {
    return telnyxOtherCall(parsed, run);
  }

  answerInstructions(): AnswerInstructions {
    return telnyxAnswerInstructions();
  }

  /**
   * Names one delivery, for a short-lived store to refuse a replay inside
   * the 5-minute signature window: by the timestamp and the body the Ed25519
   * signature covers (`meta.attempt` changes on Telnyx's own retries), so a
   * copy is caught however its signature header is written.
   */
  replayKey(request: WebhookRequest): string | null {
    const signature = request.headers[TELNYX_SIGNATURE_HEADER]?.trim();
    const timestamp = request.headers[TELNYX_TIMESTAMP_HEADER]?.trim();
    if (!signature || !timestamp) return null;
    // What is signed, not how the signature is written (base64 decoding forgives padding and stray characters).
    return `telnyx:${timestamp}:${createHash('sha256').update(request.rawBody).digest('base64url')}`;
  }

  /**
   * Telnyx recording URLs are pre-signed storage links (valid 10 minutes):
   * they are fetched as they are, without our API key, which the storage
   * would reject as a second credential anyway.
   */
  async fetchRecording(recordingUrl: string): Promise<{ contentType: string; body: Buffer }> {
    const url = new URL(recordingUrl);
    // A webhook can name any URL: only Telnyx's own hosts and its storage are fetched, never an internal host, redirects included.
    const isTelnyxStorage = carrierHostCheck(this.config.carrierApiUrls.telnyx, TELNYX_RECORDING_HOSTS);
    if (!isTelnyxStorage(url)) throw new DownloadRefused(`Refusing to fetch a recording from ${url.protocol}//${url.host}: not a Telnyx storage host`);
    let response: CarrierHttpResponse;
    try {
      response = await carrierHttp('Telnyx', url.toString(), {
        method: 'GET',
        timeoutMs: CARRIER_DOWNLOAD_TIMEOUT_MS,
        followRedirect: isTelnyxStorage,
        trustedOrigins: [new URL(this.config.carrierApiUrls.telnyx).origin],
      });
    } catch (error) {
      throw carrierNetworkFailure('Telnyx recording download', error);
    }
    if (response.status < 200 || response.status >= 300) {
      throw new Error(`Telnyx recording download answered ${response.status}${response.status === 403 ? ' (the link may have expired)' : ''}`);
    }
    return { contentType: response.headers.get('content-type') ?? contentTypeOf(url.pathname), body: response.bytes };
  }

  private async findActiveCall(api: TelnyxApi, credentials: TelnyxCredentials, call: CallReference): Promise<CallLookup> {
    const wanted = telnyxClientState(call.runId);
    let after: string | undefined;
    for (let page = 0; page < ACTIVE_CALLS_MAX_PAGES; page++) {
      const query = `page[size]=${ACTIVE_CALLS_PAGE_SIZE}${after ? `&page[after]=${encodeURIComponent(after)}` : ''}`;
      const response = await api.request('GET', `/v2/connections/${encodeURIComponent(credentials.connectionId)}/active_calls?${query}`);
      if (response.status !== 200) throw this.failure('list active calls', response);
      const body = response.body as { data?: unknown; meta?: { cursors?: { after?: unknown } } } | null;
      const calls = Array.isArray(body?.data) ? (body.data as (TelnyxLiveCall & { call_control_id?: unknown; client_state?: unknown })[]) : [];
      const match = calls.find((active) => active?.client_state === wanted && typeof active.call_control_id === 'string');
      if (match) return foundCall(call, this.name, match.call_control_id as string, telnyxLiveCallEvents(match, telnyxNow(response)));
      const next = body?.meta?.cursors?.after;
      if (calls.length < ACTIVE_CALLS_PAGE_SIZE || typeof next !== 'string' || !next) break;
      after = next;
    }
    return { kind: 'unknown' };
  }

  private failure(what: string, response: { status: number; body: unknown }): CarrierError {
    const first = telnyxErrors(response.body)[0];
    return new CarrierError(`Telnyx could not ${what} (${response.status}${first?.code ? ` ${first.code}` : ''})`, {
      reason: response.status === 401 || response.status === 403 ? 'carrier_unauthorized' : 'carrier_error',
      permanent: response.status === 401 || response.status === 403,
      notProcessed: response.status < 500,
      // Not a refusal: asked again later, the carrier may well do it (a cancel answers 502, retry).
      throttled: response.status === 429,
      carrierCode: first?.code ?? `HTTP-${response.status}`,
    });
  }

  private credentialsOrThrow(credentials: Record<string, unknown> | null): TelnyxCredentials {
    return usableCredentials('Telnyx', readTelnyxCredentials, telnyxCredentialProblems, credentials);
  }

  private api(credentials: TelnyxCredentials): TelnyxApi {
    return new TelnyxApi(this.config.carrierApiUrls.telnyx, credentials.apiKey);
  }
}

function contentTypeOf(path: string): string {
  return path.toLowerCase().endsWith('.mp3') ? 'audio/mpeg' : 'audio/wav';
}

/**
 * Telnyx's own time when it answered (its `Date` header), else ours: a
 * call's age is measured against the clock that stamped its `start_time`,
 * so a skew between our clock and Telnyx's cannot make a ringing call look
 * answered.
 */
function telnyxNow(response: TelnyxResponse): number {
  const stamped = Date.parse(response.headers.get('date') ?? '');
  return Number.isFinite(stamped) ? stamped : Date.now();
}
