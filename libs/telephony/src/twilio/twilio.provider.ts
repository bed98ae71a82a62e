import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CARRIER_REQUEST_TIMEOUT_MS, neverConnectedDialError, retryAfterMs } from '../carrier-http';
import {
  AnswerContext,
  AnswerInstructions,
  CarrierWebhooks,
  ParsedWebhook,
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
import { twilioAnswer } from './twilio-answer';
import { TwilioApi, TwilioApiError } from './twilio-api';
import { findDialedTwilioCall } from './twilio-call-search';
import { readTwilioCredentials, twilioCredentialProblems } from './twilio-credentials';
import { twilioDialForm } from './twilio-dial';
import { twilioDialError } from './twilio-errors';
import { twilioSettingsProblems } from './twilio-settings';
import { TWILIO_SIGNATURE_HEADER, twilioSignatureMatches } from './twilio-signature';
import { TwilioCallResource, twilioCallEvents, twilioRecordingEvents, twilioStatusEvents } from './twilio-status';

/**
 * A status callback whose signed `Timestamp` is older than this is refused
 * as a replay. Twilio signs no time of its own, but status callbacks carry
 * the event time among the signed fields; a genuine one arrives within
 * seconds. Requests without it (the answer and recording callbacks) are
 * bound to one run by the signed URL, and replaying them changes nothing:
 * the dialer's state machine only moves a run forward.
 */
export const TWILIO_REPLAY_WINDOW_MS = 60 * 60 * 1000;
const FUTURE_SKEW_MS = 5 * 60 * 1000;

/** Twilio error 21220: the call is not in a state that allows this update (already ended). */
const INVALID_CALL_STATE = 21220;

/**
 * Twilio Programmable Voice (REST API 2010-04-01). Calls are placed with the
 * customer's account; Twilio then calls our answer URL (we answer TwiML that
 * streams the audio to the agent runtime) and reports progress to our status
 * and recording URLs, each request signed with X-Twilio-Signature.
 */
@Injectable()
export class TwilioProvider implements TelephonyProvider, CarrierWebhooks {
  readonly name = 'twilio';
  readonly pricesOnLookup = true;
  readonly streamsAtDial = false;
  readonly findsCallsByNumbers = true;
  /** How long one REST request may take; tests shorten it. */
  requestTimeoutMs = CARRIER_REQUEST_TIMEOUT_MS;
  private readonly api: TwilioApi;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.api = new TwilioApi(config.carrierApiUrls.twilio, () => this.requestTimeoutMs);
  }

  validateCredentials(credentials: Record<string, unknown> | null): string[] {
    return twilioCredentialProblems(credentials);
  }

  accountOf(credentials: Record<string, unknown> | null): string | null {
    return namedAccount(credentials, 'account_sid', true);
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return twilioSettingsProblems(settings);
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const credentials = readTwilioCredentials(request.credentials);
    let sid: unknown;
    try {
      sid = (await this.api.createCall(credentials, twilioDialForm(request)))?.sid;
    } catch (error) {
      throw dialFailure(error);
    }
    // A 2xx without a call SID: something answered, but we cannot tell whether a call exists.
    if (typeof sid !== 'string' || sid === '') throw new Error('Twilio accepted the dial request but returned no call SID');
    return { providerCallId: sid };
  }

  /**
   * By SID when we have it. Without it, Twilio can only be asked for calls
   * by number and time, so the dial's own To, From and time find the call
   * (`findDialedTwilioCall`); when they do not single one out, or the dial
   * is not known, the answer is `unknown`, never `not_found`.
   */
  async lookupCall(call: CallReference): Promise<CallLookup> {
    if (!call.providerCallId) {
      if (!call.dial) return { kind: 'unknown' };
      const dialed = await findDialedTwilioCall(this.api, readTwilioCredentials(call.credentials), call.dial, this.requestTimeoutMs);
      return dialed ? this.found(call, dialed) : { kind: 'unknown' };
    }
    const credentials = readTwilioCredentials(call.credentials);
    try {
      return this.found(call, await this.api.fetchCall(credentials, call.providerCallId));
    } catch (error) {
      if (error instanceof TwilioApiError && error.status === 404) return { kind: 'not_found' };
      throw error;
    }
  }

  /**
   * `Status=canceled` ends a call that is queued or ringing and leaves an
   * answered one alone (that one belongs to the agent). Twilio answers with
   * the call as it now is, so anything but `canceled` means it could not.
   */
  async hangup(call: CallReference): Promise<boolean> {
    return (await this.updateStatus(call, 'canceled')) === 'canceled';
  }

  /**
   * `Status=completed` ends the call whether it is answered or not: Twilio
   * cancels one still queued or ringing, and hangs up one in progress. Only
   * a call that has ended already is refused (error 21220), so an accepted
   * request is a call ended, whatever status the answer shows.
   */
  async endCall(call: CallReference): Promise<boolean> {
    return (await this.updateStatus(call, 'completed')) !== null;
  }

  /** The call's status in Twilio's answer to the update; null when there is no call, or it has ended already. */
  private async updateStatus(call: CallReference, status: 'canceled' | 'completed'): Promise<string | null> {
    if (!call.providerCallId) return null;
    const credentials = readTwilioCredentials(call.credentials);
    try {
      const updated = await this.api.updateCall(credentials, call.providerCallId, new URLSearchParams({ Status: status }));
      return typeof updated?.status === 'string' ? updated.status : '';
    } catch (error) {
      // Gone, or already ended: nothing left to end.
      if (error instanceof TwilioApiError && (error.status === 404 || error.body?.code === INVALID_CALL_STATE)) return null;
      throw error;
    }
  }

  /** The transcript comes from the agent runtime, the recording through `fetchRecording`: Twilio has neither to give here. */
  async collectArtifacts(): Promise<CallArtifacts> {
    return { transcript: [], recording: null };
  }

  verifyWebhook(request: WebhookRequest, credentials: Record<string, unknown> | null, nowMs: number): void {
    const signature = request.headers[TWILIO_SIGNATURE_HEADER];
    if (!signature) throw new WebhookRejected(401, 'The request carries no X-Twilio-Signature header');
    const account = webhookCredentials('Twilio', readTwilioCredentials, credentials);
    if (!twilioSignatureMatches(account.authToken, request.url, signedFormFields(request), signature)) {
      throw new WebhookRejected(403, 'X-Twilio-Signature does not match this request');
    }
    const values = new Map(webhookRequestFields(request));
    const accountSid = values.get('AccountSid');
    if (accountSid !== undefined && accountSid !== account.accountSid) {
      throw new WebhookRejected(403, 'The request is signed for another Twilio account');
    }
    const timestamp = values.get('Timestamp');
    if (timestamp !== undefined) {
      const at = Date.parse(timestamp);
      if (Number.isNaN(at)) throw new WebhookRejected(403, 'The request has an unreadable Timestamp');
      if (nowMs - at > TWILIO_REPLAY_WINDOW_MS) throw new WebhookRejected(403, `The event is older than ${TWILIO_REPLAY_WINDOW_MS / 60000} minutes: a replay`);
      if (at - nowMs > FUTURE_SKEW_MS) throw new WebhookRejected(403, 'The event is dated in the future');
    }
  }

  parseWebhook(kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
    const fields = new Map(webhookRequestFields(request));
    const receivedAt = new Date();
    return {
      providerCallId: fields.get('CallSid') ?? null,
      events: kind === 'recording' ? twilioRecordingEvents(fields, receivedAt) : twilioStatusEvents(fields, receivedAt),
    };
  }

  answerInstructions(context: AnswerContext): AnswerInstructions {
    return twilioAnswer(context);
  }

  async fetchRecording(recordingUrl: string, credentials: Record<string, unknown> | null): Promise<{ contentType: string; body: Buffer }> {
    return this.api.download(recordingUrl, readTwilioCredentials(credentials));
  }

  /** Asks Twilio whether the credentials work and the account may place calls (for `POST .../verify`). */
  async checkCredentials(credentials: Record<string, unknown> | null): Promise<CredentialsCheck> {
    const malformed = malformedCredentialsCheck(twilioCredentialProblems(credentials));
    if (malformed) return malformed;
    try {
      const account = await this.api.fetchAccount(readTwilioCredentials(credentials));
      if (account?.status === 'active') return { ok: true };
      const reason = account?.status === 'closed' ? 'account_closed' : 'account_suspended';
      return { ok: false, reason, message: `The Twilio account is ${account?.status ?? 'not active'}` };
    } catch (error) {
      if (error instanceof TwilioApiError && refusesCredentials(error.status)) return refusedCredentialsCheck('Twilio', `: ${error.message}`);
      throw error;
    }
  }

  /**
   * A key that is the same for an exact replay of a request (its signature
   * covers the URL and every field, and status callbacks carry a sequence
   * number and time), for a short-lived store to refuse duplicates.
   */
  replayKey(request: WebhookRequest): string | null {
    const signature = request.headers[TWILIO_SIGNATURE_HEADER];
    return signature ? `twilio:${signature}` : null;
  }

  private found(call: CallReference, resource: TwilioCallResource): CallLookup {
    return foundCall(call, this.name, resource.sid, twilioCallEvents(resource, new Date()));
  }
}

function dialFailure(error: unknown): unknown {
  if (error instanceof TwilioApiError) return twilioDialError(error.status, error.body, retryAfterMs(error.headers.get('retry-after')));
  return neverConnectedDialError(error) ?? error;
}
