import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { callbackUrlsFor } from '../callback-urls';
import { CARRIER_REQUEST_TIMEOUT_MS, neverConnectedDialError, retryAfterMs } from '../carrier-http';
import {
  AnswerContext,
  AnswerInstructions,
  CarrierWebhooks,
  ParsedWebhook,
  WebhookEvent,
  WebhookKind,
  WebhookRejected,
  WebhookRequest,
} from '../carrier-webhooks';
import { malformedCredentialsCheck, refusedCredentialsCheck, refusesCredentials } from '../credentials-checks';
import { foundCall } from '../found-call';
import { namedAccount } from '../usable-credentials';
import {
  CallArtifacts,
  CallLookup,
  CallReference,
  CredentialsCheck,
  PlaceCallRequest,
  PlaceCallResult,
  TelephonyProvider,
} from '../telephony-provider';
import { webhookCredentials } from '../webhook-credentials';
import { signedFormFields, webhookRequestFields } from '../webhook-form-fields';
import { plivoAnswer } from './plivo-answer';
import { PlivoApi, PlivoApiError } from './plivo-api';
import { findDialedPlivoCall } from './plivo-call-search';
import { plivoCredentialProblems, readPlivoCredentials } from './plivo-credentials';
import { plivoDialBody } from './plivo-dial';
import { plivoDialError } from './plivo-errors';
import { plivoSettingsProblems } from './plivo-settings';
import {
  PLIVO_MAIN_ACCOUNT_SIGNATURE_HEADER,
  PLIVO_NONCE_HEADER,
  PLIVO_SIGNATURE_HEADER,
  plivoSignatureMatches,
} from './plivo-signature';
import { plivoCallRecordEvents, plivoLiveCallEvents, plivoRecordingEvents, plivoStatusEvents } from './plivo-status';

/**
 * Plivo Voice. A dial request returns a `request_uuid`, our provider call
 * id. For a call placed through the API it is also the call's `CallUUID`
 * (Plivo's callbacks carry it as `RequestUUID`/`ALegRequestUUID` beside
 * `CallUUID`), so look-ups and hang-ups can use it for queued, live and ended
 * calls alike. Plivo calls our answer URL (we answer Plivo XML that streams
 * the audio to the agent runtime) and reports ringing, the end of the call,
 * machine detection and recordings to our other URLs, each request signed
 * with X-Plivo-Signature-V3.
 */
@Injectable()
export class PlivoProvider implements TelephonyProvider, CarrierWebhooks {
  readonly name = 'plivo';
  readonly pricesOnLookup = true;
  readonly streamsAtDial = false;
  readonly findsCallsByNumbers = true;
  /** How long one REST request may take; tests shorten it. */
  requestTimeoutMs = CARRIER_REQUEST_TIMEOUT_MS;
  private readonly api: PlivoApi;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.api = new PlivoApi(config.carrierApiUrls.plivo, () => this.requestTimeoutMs);
  }

  validateCredentials(credentials: Record<string, unknown> | null): string[] {
    return plivoCredentialProblems(credentials);
  }

  accountOf(credentials: Record<string, unknown> | null): string | null {
    return namedAccount(credentials, 'auth_id');
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return plivoSettingsProblems(settings);
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const credentials = readPlivoCredentials(request.credentials);
    let requestUuid: unknown;
    try {
      requestUuid = (await this.api.makeCall(credentials, plivoDialBody(request)))?.request_uuid;
    } catch (error) {
      throw dialFailure(error);
    }
    // A 2xx without a request UUID: something answered, but we cannot tell whether a call exists.
    if (typeof requestUuid !== 'string' || requestUuid === '') throw new Error('Plivo accepted the dial request but returned no request_uuid');
    return { providerCallId: requestUuid };
  }

  /**
   * Queued (waiting for the account's calls-per-second turn), live, or ended
   * with a detail record. Plivo writes the detail record after the call, so
   * finding nothing anywhere for a UUID Plivo gave us is no proof there was
   * no call: the answer is then `unknown`. Without the UUID, the dial's own
   * numbers and time find the call (`findDialedPlivoCall`); when they do not
   * single one out, or the dial is not known, the answer is `unknown` too.
   */
  async lookupCall(call: CallReference): Promise<CallLookup> {
    if (!call.providerCallId) return this.lookupDial(call);
    const credentials = readPlivoCredentials(call.credentials);
    const uuid = call.providerCallId;
    const now = new Date();
    if (await this.api.queuedCall(credentials, uuid)) return this.found(call, uuid, []);
    const live = await this.api.liveCall(credentials, uuid);
    if (live) return this.found(call, uuid, plivoLiveCallEvents(live, now));
    const record = await this.api.callRecord(credentials, uuid);
    if (record) return this.found(call, uuid, plivoCallRecordEvents(record, now));
    return { kind: 'unknown' };
  }

  /**
   * Hangs up a call that is not answered yet: a ringing call request
   * (`DELETE /Request/{uuid}/`), or a call still queued (`DELETE /Call/{uuid}/`,
   * which Plivo documents for canceling queued calls). An answered call
   * belongs to the agent and is left alone.
   */
  async hangup(call: CallReference): Promise<boolean> {
    if (!call.providerCallId) return false;
    const credentials = readPlivoCredentials(call.credentials);
    if (await this.api.cancelRequest(credentials, call.providerCallId)) return true;
    if (!(await this.api.queuedCall(credentials, call.providerCallId))) return false;
    return this.api.hangupCall(credentials, call.providerCallId);
  }

  /**
   * Ends the call whatever its state: a call request not answered yet is
   * hung up as such, and anything else through `DELETE /Call/{uuid}/`, which
   * hangs up a live call and cancels a queued one.
   */
  async endCall(call: CallReference): Promise<boolean> {
    if (!call.providerCallId) return false;
    const credentials = readPlivoCredentials(call.credentials);
    try {
      if (await this.api.cancelRequest(credentials, call.providerCallId)) return true;
    } catch (error) {
      // A request Plivo refuses to hang up as such (answered already: Plivo's answer for that is not documented) may
      // still be a live call. A throttled one is not tried again at once.
      if (!(error instanceof PlivoApiError && error.status >= 400 && error.status < 500 && error.status !== 429)) throw error;
    }
    return this.api.hangupCall(credentials, call.providerCallId);
  }

  /** The transcript comes from the agent runtime, the recording through `fetchRecording`: Plivo has neither to give here. */
  async collectArtifacts(): Promise<CallArtifacts> {
    return { transcript: [], recording: null };
  }

  /**
   * X-Plivo-Signature-V3 is made with the Auth Token of the (sub)account the
   * call belongs to; X-Plivo-Signature-Ma-V3 with the main account's. Either
   * matching our credentials' token is Plivo's word. Plivo signs no time, so
   * there is no age to check: an exact replay (same nonce and signature) is
   * recognisable by `replayKey`, and a replayed event cannot move a run
   * backwards in any case.
   */
  verifyWebhook(request: WebhookRequest, credentials: Record<string, unknown> | null, _nowMs: number): void {
    const signature = request.headers[PLIVO_SIGNATURE_HEADER];
    const mainAccountSignature = request.headers[PLIVO_MAIN_ACCOUNT_SIGNATURE_HEADER];
    const nonce = request.headers[PLIVO_NONCE_HEADER];
    if (!nonce || (!signature && !mainAccountSignature)) {
      throw new WebhookRejected(401, 'The request carries no X-Plivo-Signature-V3 and X-Plivo-Signature-V3-Nonce headers');
    }
    const { authToken } = webhookCredentials('Plivo', readPlivoCredentials, credentials);
    const params = signedFormFields(request);
    const matches = (header: string | undefined) =>
      header !== undefined && plivoSignatureMatches(authToken, request.method, request.url, params, nonce, header);
    // Both are checked, so the time taken does not tell which one was close.
    const byAccount = matches(signature);
    const byMainAccount = matches(mainAccountSignature);
    if (!byAccount && !byMainAccount) throw new WebhookRejected(403, 'X-Plivo-Signature-V3 does not match this request');
  }

  parseWebhook(kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
    const fields = new Map(webhookRequestFields(request));
    const receivedAt = new Date();
    const providerCallId = fields.get('RequestUUID') || fields.get('ALegRequestUUID') || fields.get('CallUUID') || null;
    return {
      providerCallId,
      events: kind === 'recording' ? plivoRecordingEvents(fields, receivedAt) : plivoStatusEvents(fields, receivedAt),
    };
  }

  answerInstructions(context: AnswerContext): AnswerInstructions {
    return plivoAnswer(context, callbackUrlsFor(this.config.publicBaseUrl, this.name, context.runId).recordingUrl);
  }

  async fetchRecording(recordingUrl: string, credentials: Record<string, unknown> | null): Promise<{ contentType: string; body: Buffer }> {
    return this.api.download(recordingUrl, readPlivoCredentials(credentials));
  }

  /** Asks Plivo whether the credentials work (for `POST .../verify`). */
  async checkCredentials(credentials: Record<string, unknown> | null): Promise<CredentialsCheck> {
    const malformed = malformedCredentialsCheck(plivoCredentialProblems(credentials));
    if (malformed) return malformed;
    try {
      await this.api.listOneCall(readPlivoCredentials(credentials));
      return { ok: true };
    } catch (error) {
      if (error instanceof PlivoApiError && refusesCredentials(error.status)) return refusedCredentialsCheck('Plivo', `: ${error.message}`);
      throw error;
    }
  }

  /**
   * Names one delivery by its nonce, for a short-lived store to refuse a
   * replay: the nonce is signed, so a copy must keep it, while the signature
   * header's text can be varied (spaces, extra comma-separated entries)
   * without failing verification.
   */
  replayKey(request: WebhookRequest): string | null {
    // The nonce alone: `verifyWebhook` accepts nothing without one, and a copy that moves its signature from one
    // header to the other (or leaves one empty) is still the same delivery.
    const nonce = request.headers[PLIVO_NONCE_HEADER];
    return nonce ? `plivo:${nonce}` : null;
  }

  private async lookupDial(call: CallReference): Promise<CallLookup> {
    if (!call.dial) return { kind: 'unknown' };
    const dialed = await findDialedPlivoCall(this.api, readPlivoCredentials(call.credentials), call.dial, this.requestTimeoutMs);
    if (!dialed) return { kind: 'unknown' };
    const now = new Date();
    if (dialed.state === 'ended') return this.found(call, dialed.providerCallId, plivoCallRecordEvents(dialed.record, now));
    return this.found(call, dialed.providerCallId, dialed.state === 'live' ? plivoLiveCallEvents(dialed.call, now) : []);
  }

  private found(call: CallReference, uuid: string, events: WebhookEvent[]): CallLookup {
    return foundCall(call, this.name, uuid, events);
  }
}

function dialFailure(error: unknown): unknown {
  if (error instanceof PlivoApiError) return plivoDialError(error.status, error.body, retryAfterMs(error.headers.get('retry-after')));
  return neverConnectedDialError(error) ?? error;
}
