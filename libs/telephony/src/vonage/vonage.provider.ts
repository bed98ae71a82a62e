import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { callbackUrlsFor } from '../callback-urls';
import { CarrierError } from '../carrier-error';
import { carrierHostCheck, DownloadRefused, isPublicHttpsUrl } from '../carrier-http';
import { AnswerContext, AnswerInstructions, CarrierWebhooks, ParsedWebhook, WebhookKind, WebhookRequest, WebhookRun } from '../carrier-webhooks';
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
import { VonageApi, VonageResponse } from './vonage-api';
import { readVonageCredentials, vonageCredentialProblems, VonageCredentials } from './vonage-credentials';
import { vonageDialBody, vonageNumber } from './vonage-dial';
import { vonageDialError, vonageProblem } from './vonage-errors';
import { parseVonageWebhook, vonageOtherCall, vonageStatusEvent, vonageTime } from './vonage-events';
import { vonageAnswerInstructions } from './vonage-ncco';
import { verifyVonageWebhook, vonageReplayKey } from './vonage-signature';
import { vonageSettingsProblems } from './vonage-settings';

/** Hosts Vonage serves recordings from; the application JWT is sent to no other. */
const RECORDING_HOSTS = /(^|\.)(nexmo|vonage)\.com$/;

/** The statuses of a call not answered yet. */
const UNANSWERED = ['started', 'ringing'];
/** The statuses of a call that has not ended: not answered yet, or answered by a person or a machine. */
const LIVE = [...UNANSWERED, 'answered', 'human', 'machine'];

/**
 * Vonage through the Voice API (`POST /v1/calls`), authenticated by a JWT
 * signed with the customer's application key. Vonage fetches the NCCO from
 * our answer URL, which connects the call to the agent runtime's WebSocket;
 * its webhooks are verified with the account's signature secret.
 */
@Injectable()
export class VonageProvider implements TelephonyProvider, CarrierWebhooks {
  readonly name = 'vonage';
  readonly pricesOnLookup = true;
  readonly streamsAtDial = false;
  readonly findsCallsByNumbers = false;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  validateCredentials(credentials: Record<string, unknown> | null): string[] {
    return vonageCredentialProblems(credentials);
  }

  accountOf(credentials: Record<string, unknown> | null): string | null {
    return namedAccount(credentials, 'application_id', true);
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return vonageSettingsProblems(settings);
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const credentials = this.credentialsOrThrow(request.credentials);
    const to = vonageNumber(request.to);
    if (!to) throw numberError('invalid_number', `Vonage cannot call ${request.to}: not an E.164 number`);
    const from = vonageNumber(request.from);
    if (!from) throw numberError('invalid_from_number', `Vonage cannot call from ${request.from}: not an E.164 number`);

    const response = await this.api(credentials).request('POST', '/v1/calls', vonageDialBody(request, to, from));
    if (response.status < 200 || response.status >= 300) throw vonageDialError(response);
    const uuid = (response.body as { uuid?: unknown } | null)?.uuid;
    if (typeof uuid !== 'string' || !uuid) {
      throw new Error(`Vonage accepted the call (${response.status}) without a uuid`);
    }
    return { providerCallId: uuid };
  }

  /**
   * `GET /v1/calls/{uuid}` gives the call's status, duration and price, read
   * like a status webhook. Vonage cannot be asked by run: without a uuid, or
   * for a uuid it no longer knows, the answer is `unknown`.
   */
  async lookupCall(call: CallReference): Promise<CallLookup> {
    if (!call.providerCallId) return { kind: 'unknown' };
    const credentials = this.credentialsOrThrow(call.credentials);
    const response = await this.api(credentials).request('GET', `/v1/calls/${encodeURIComponent(call.providerCallId)}`);
    if (response.status === 404) return { kind: 'unknown' };
    if (response.status !== 200) throw this.failure('look up the call', response);
    const details = (response.body ?? {}) as Record<string, unknown>;
    const occurredAt = vonageTime(details.end_time) ?? vonageTime(details.start_time) ?? new Date().toISOString();
    const status = vonageStatusEvent(details, occurredAt);
    // A call read as answered is dated by its start (or its end), not by the moment it was answered: an estimate,
    // which never moves an answer time the call's own events gave.
    const event = status?.type === 'answered' ? { ...status, answerTimeEstimated: true } : status;
    return foundCall(call, this.name, call.providerCallId, event ? [event] : []);
  }

  /**
   * Hangs up a call Vonage reports not answered yet (`started`, `ringing`):
   * its hangup ends any call, and one answered before its `answered` event
   * reached us is a conversation under way, not a call to cancel.
   */
  async hangup(call: CallReference): Promise<boolean> {
    return this.hangupIn(call, UNANSWERED);
  }

  /** Hangs up a call Vonage reports unanswered or answered (a human or a machine): any call not ended yet. */
  async endCall(call: CallReference): Promise<boolean> {
    return this.hangupIn(call, LIVE);
  }

  /** Asks for the call's status first: Vonage's hangup is not documented for a call that has ended. */
  private async hangupIn(call: CallReference, states: readonly string[]): Promise<boolean> {
    if (!call.providerCallId) return false;
    const credentials = this.credentialsOrThrow(call.credentials);
    const path = `/v1/calls/${encodeURIComponent(call.providerCallId)}`;
    const current = await this.api(credentials).request('GET', path);
    if (current.status === 404) return false;
    if (current.status !== 200) throw this.failure('look up the call', current);
    const status = (current.body as { status?: unknown } | null)?.status;
    if (typeof status !== 'string' || !states.includes(status)) return false;
    const response = await this.api(credentials).request('PUT', path, { action: 'hangup' });
    if (response.status >= 200 && response.status < 300) return true;
    if (response.status === 404) return false;
    throw this.failure('hang up the call', response);
  }

  async collectArtifacts(): Promise<CallArtifacts> {
    // The transcript comes from the agent runtime; Vonage's recording through fetchRecording.
    return { transcript: [], recording: null };
  }

  /**
   * Asks Vonage whether the credentials work: the cheapest authenticated read,
   * one page of one call (`GET /v1/calls?page_size=1`). Vonage checks the
   * application JWT (application id and private key) before anything else,
   * so 401/403 mean these credentials are refused. Throws when Vonage cannot
   * be asked, or answers something a working account never gets (404, 429, 5xx).
   */
  async checkCredentials(credentials: Record<string, unknown> | null): Promise<CredentialsCheck> {
    const malformed = malformedCredentialsCheck(vonageCredentialProblems(credentials));
    if (malformed) return malformed;
    const read = this.credentialsOrThrow(credentials);
    const response = await this.api(read).request('GET', '/v1/calls?page_size=1');
    if (response.status >= 200 && response.status < 300) return { ok: true };
    if (response.status === 401 || response.status === 403) {
      const problem = vonageProblem(response.body);
      return refusedCredentialsCheck('Vonage', ` (HTTP ${response.status}${problem.title ? ` ${problem.title}` : ''})`);
    }
    throw new Error(`Vonage answered HTTP ${response.status} while checking credentials`);
  }

  verifyWebhook(request: WebhookRequest, credentials: Record<string, unknown> | null, nowMs: number): void {
    const read = readVonageCredentials(credentials);
    const secret = typeof credentials?.signature_secret === 'string' && credentials.signature_secret ? credentials.signature_secret : null;
    verifyVonageWebhook(request, { signatureSecret: secret, applicationId: read?.applicationId ?? null }, nowMs);
  }

  parseWebhook(kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
    return parseVonageWebhook(kind, request);
  }

  otherCallThan(kind: WebhookKind, parsed: ParsedWebhook, run: WebhookRun, request: WebhookRequest): string | null {
    return vonageOtherCall(kind, parsed, run, request);
  }

  /**
   * Names one delivery, for a short-lived store to refuse an exact replay
   * inside the 5-minute `iat` window: the signed JWT's `jti`, unique per
   * token, else the token itself (it covers the body through `payload_hash`).
   */
  replayKey(request: WebhookRequest): string | null {
    return vonageReplayKey(request);
  }

  answerInstructions(context: AnswerContext): AnswerInstructions {
    return vonageAnswerInstructions(context, callbackUrlsFor(this.config.publicBaseUrl, this.name, context.runId));
  }

  /** Downloads a recording with the application JWT, from Vonage's hosts (or the configured API base) only. */
  async fetchRecording(recordingUrl: string, credentials: Record<string, unknown> | null): Promise<{ contentType: string; body: Buffer }> {
    const url = new URL(recordingUrl);
    const isVonage = carrierHostCheck(this.config.carrierApiUrls.vonage, RECORDING_HOSTS);
    if (!isVonage(url)) throw new DownloadRefused(`Refusing to send Vonage credentials to ${url.origin}`);
    const read = this.credentialsOrThrow(credentials);
    // Vonage may hand the file over to its storage; never to an internal address.
    const download = await this.api(read).download(url.toString(), (target) => isVonage(target) || isPublicHttpsUrl(target));
    if (download.status !== 200) throw new Error(`Vonage recording download answered ${download.status}`);
    return { contentType: download.contentType ?? 'audio/wav', body: download.body };
  }

  private failure(what: string, response: VonageResponse): CarrierError {
    const problem = vonageProblem(response.body);
    const unauthorized = response.status === 401 || response.status === 403;
    return new CarrierError(`Vonage could not ${what} (${response.status}${problem.title ? ` ${problem.title}` : ''})`, {
      reason: unauthorized ? 'carrier_unauthorized' : 'carrier_error',
      permanent: unauthorized,
      notProcessed: response.status < 500,
      // Not a refusal: asked again later, the carrier may well do it (a cancel answers 502, retry).
      throttled: response.status === 429,
      carrierCode: problem.code ?? `HTTP-${response.status}`,
    });
  }

  private credentialsOrThrow(credentials: Record<string, unknown> | null): VonageCredentials {
    return usableCredentials('Vonage', readVonageCredentials, vonageCredentialProblems, credentials);
  }

  private api(credentials: VonageCredentials): VonageApi {
    return new VonageApi(this.config.carrierApiUrls.vonage, credentials);
  }
}

function numberError(reason: string, message: string): CarrierError {
  return new CarrierError(message, { reason, permanent: true, notProcessed: true });
}
