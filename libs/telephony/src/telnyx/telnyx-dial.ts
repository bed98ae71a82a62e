import { PlaceCallRequest } from '../telephony-provider';
import { telnyxClientState } from './telnyx-client-state';
import { TelnyxCredentials } from './telnyx-credentials';
import { readTelnyxSettings } from './telnyx-settings';

/** The agent runtime's media WebSocket for one run (session token already in the URL), and the token alone. */
export interface AgentStreamTarget {
  url: string;
  sessionToken: string;
}

/**
 * What placing a Telnyx call needs beyond `PlaceCallRequest`: Call Control
 * has no answer URL, so the stream to the agent is part of the dial. The
 * dialer is expected to mint the session token before dialing.
 */
export type TelnyxPlaceCallRequest = PlaceCallRequest & { agentStream?: AgentStreamTarget };

/** The agent runtime's audio, both directions: G.711 mu-law at 8 kHz, carried as base64 RTP payloads. */
export const TELNYX_STREAM_CODEC = 'PCMU';

/** Telnyx's ceiling (and default) for `time_limit_secs`: 4 hours. */
const MAX_TIME_LIMIT_SECS = 14_400;

/**
 * How long Telnyx lets a call ring before it hangs up (`hangup_cause:
 * timeout`): its documented default, sent on every dial so that no account
 * or application setting can change it. The look-up relies on it: Telnyx
 * cannot say whether a live call was answered, but one alive well past this
 * was (see `telnyxLiveCallEvents`).
 */
export const TELNYX_RING_TIMEOUT_SECS = 30;

/** The JSON body of `POST /v2/calls` (Call Control "Dial"). */
export function telnyxDialBody(
  request: PlaceCallRequest,
  credentials: TelnyxCredentials,
  stream: AgentStreamTarget,
): Record<string, unknown> {
  const settings = readTelnyxSettings(request.settings);
  return {
    connection_id: credentials.connectionId,
    to: request.to,
    from: request.from,
    webhook_url: request.callbacks.statusUrl,
    webhook_url_method: 'POST',
    client_state: telnyxClientState(request.runId),
    // Telnyx may ignore a second command with the same command_id; the dialer does not count on it (a dial is sent
    // again only after an answer that says nothing was done).
    command_id: `run-${request.runId}`,
    timeout_secs: TELNYX_RING_TIMEOUT_SECS,
    time_limit_secs: Math.min(MAX_TIME_LIMIT_SECS, Math.max(1, Math.round(request.maxCallDurationSeconds))),
    stream_url: stream.url,
    // The callee's audio goes to the agent; the agent's audio comes back over the same socket as RTP.
    stream_track: 'inbound_track',
    // PCMU (mu-law, 8 kHz) both ways, as Twilio and Plivo stream. Without stream_codec Telnyx streams
    // whatever codec the call negotiated (PCMA, G722, OPUS ...), which the runtime could not predict.
    stream_codec: TELNYX_STREAM_CODEC,
    stream_bidirectional_mode: 'rtp',
    stream_bidirectional_codec: TELNYX_STREAM_CODEC,
    stream_auth_token: stream.sessionToken,
    ...(settings.answeringMachineDetection ? { answering_machine_detection: 'premium' } : {}),
    ...(settings.record ? { record: 'record-from-answer', record_format: 'wav' } : {}),
  };
}
