import { CallEventJob } from '@app/queue';

/** Our URLs a carrier calls back for one run (all absolute, under PUBLIC_BASE_URL). */
export interface CallbackUrls {
  /** Fetched when the call is answered: we answer with call-control instructions (TwiML, NCCO, ...). */
  answerUrl: string;
  /** Status events of the call. */
  statusUrl: string;
  /** Recording-ready notifications, for carriers that send them apart from status events. */
  recordingUrl: string;
}

/** What the dialer hands a provider to place one call. */
export interface PlaceCallRequest {
  runId: number;
  organizationId: number;
  to: string;
  from: string;
  credentials: Record<string, unknown> | null;
  settings: Record<string, unknown>;
  maxCallDurationSeconds: number;
  callbacks: CallbackUrls;
  /** The agent runtime stream, for carriers that connect it at dial time (`streamsAtDial`). */
  agentStream?: { url: string; sessionToken: string };
}

export interface PlaceCallResult {
  providerCallId: string;
}

/** Identifies one of our calls at the carrier, for look-ups and hang-ups. */
export interface CallReference {
  runId: number;
  organizationId: number;
  /** Null when the dialer never learned it (it died, or the answer was lost). */
  providerCallId: string | null;
  credentials: Record<string, unknown> | null;
  settings: Record<string, unknown>;
  /**
   * The dial that placed the call, when the dialer knows it: carriers that
   * carry nothing of ours on a call can only find it by its numbers and time
   * when `providerCallId` is null.
   */
  dial?: DialAttempt;
}

/** One dial request as it was sent, for finding its call without the carrier's id. */
export interface DialAttempt {
  to: string;
  /** The from number this dial used (a configuration may rotate several). */
  from: string;
  /** When the request was about to be sent: the carrier cannot have created the call before. */
  attemptedAt: Date;
}

/**
 * What the carrier knows of a call. `not_found` is a definite answer (no call
 * was placed); `unknown` means the carrier cannot tell.
 */
export type CallLookup =
  | { kind: 'not_found' }
  | { kind: 'unknown' }
  | { kind: 'found'; providerCallId: string; events: CallEventJob[] };

/** The carrier's word on whether credentials work (`POST /telephony-configurations/{id}/verify`). */
export type CredentialsCheck = { ok: true } | { ok: false; reason: string; message: string };

/** The conversation as the agent saw it, for providers that simulate the call themselves. */
export interface CallArtifactsRequest {
  runId: number;
  providerCallId: string;
  settings: Record<string, unknown>;
  durationSeconds: number;
  agentOpening: string;
  /** Whether a recording is wanted (the run has none yet): one made is as long as the call, up to an hour of WAV. */
  withRecording: boolean;
}

export interface CallArtifacts {
  transcript: TranscriptTurn[];
  recording: { contentType: string; body: Buffer } | null;
}

export interface TranscriptTurn {
  speaker: 'agent' | 'user';
  text: string;
  start_ms: number;
  end_ms: number;
}

/** Where a provider reports status events; the dialer applies them to runs. */
export interface CallEventSink {
  publish(event: CallEventJob, delayMs?: number): Promise<void>;
}

/**
 * One carrier. Everything the dialer does with a call goes through here, so
 * a new carrier is one more implementation and nothing else changes.
 */
export interface TelephonyProvider {
  readonly name: string;
  /**
   * Whether a look-up of a finished call can tell its price. A hang-up that
   * came without one is followed by a look-up only at such carriers (Twilio
   * prices the Call resource, not its status callback); the others would be
   * asked for nothing on every call.
   */
  readonly pricesOnLookup: boolean;
  /**
   * Whether the carrier connects the agent stream at dial time (Telnyx Call
   * Control, which has no answer URL): only such a dial is given
   * `agentStream`, whose session token the others mint when the call is
   * answered.
   */
  readonly streamsAtDial: boolean;
  /**
   * Whether `lookupCall` without a call id finds the call by the dial's
   * numbers and time (Twilio, Plivo) rather than by our run: its one match
   * may then be another run's call to the same number.
   */
  readonly findsCallsByNumbers: boolean;
  /** Checks the shape of credentials; returns problems, empty when valid. */
  validateCredentials(credentials: Record<string, unknown> | null): string[];
  /**
   * The carrier account (Vonage: the application) that credentials place
   * calls in, as their own field names it; null when they name none. A call
   * stays in the account it was placed in: its webhooks are signed, and its
   * hang-up and look-up answered, by that account only.
   */
  accountOf(credentials: Record<string, unknown> | null): string | null;
  /** Checks provider `settings`; returns problems, empty when valid. */
  validateSettings(settings: Record<string, unknown>): string[];
  placeCall(request: PlaceCallRequest): Promise<PlaceCallResult>;
  /** Asks the carrier about a call whose events stopped; its answer reconciles the run. */
  lookupCall(call: CallReference): Promise<CallLookup>;
  /** Ends a call that is dialing or ringing; the carrier then reports it `canceled`. Returns false when it cannot. */
  hangup(call: CallReference): Promise<boolean>;
  /**
   * Ends the call whatever its state, answered included: the call of a run
   * the reaper ended at its limit, which must not ring later nor talk on
   * outside its configuration's concurrency; on carriers that connect the
   * agent at dial time (Telnyx), an answering machine to hang up on. Returns
   * false when there is no call to end.
   */
  endCall(call: CallReference): Promise<boolean>;
  /** Builds or fetches what the call left behind once it completed. */
  collectArtifacts(request: CallArtifactsRequest): Promise<CallArtifacts>;
  /**
   * What the carrier itself does once a call is answered, for carriers that run
   * inside this service (the sandbox fetches our answer URL and runs its agent).
   */
  afterAnswer?(call: CallReference): Promise<void>;
  /** Asks the carrier whether the credentials work. Throws when the carrier cannot be reached. */
  checkCredentials(credentials: Record<string, unknown> | null): Promise<CredentialsCheck>;
}
