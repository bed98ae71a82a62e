import { PlaceCallRequest } from '../telephony-provider';
import { readVonageSettings } from './vonage-settings';

/** Vonage's bounds for `length_timer` (seconds after answer before it hangs up). */
const MAX_LENGTH_TIMER = 86_400;

/** Vonage numbers are E.164 digits without the `+` (7 to 15 digits). */
export function vonageNumber(e164: string): string | null {
  const digits = e164.trim().replace(/^\+/, '');
  return /^\d{7,15}$/.test(digits) ? digits : null;
}

/**
 * The JSON body of `POST /v1/calls`: Vonage fetches the NCCO from our answer
 * URL when the call is answered, and posts every status to our status URL.
 * Both by POST, so the signed webhook's `payload_hash` covers a JSON body.
 */
export function vonageDialBody(request: PlaceCallRequest, to: string, from: string): Record<string, unknown> {
  const settings = readVonageSettings(request.settings);
  return {
    to: [{ type: 'phone', number: to }],
    from: { type: 'phone', number: from },
    answer_url: [request.callbacks.answerUrl],
    answer_method: 'POST',
    event_url: [request.callbacks.statusUrl],
    event_method: 'POST',
    length_timer: Math.min(MAX_LENGTH_TIMER, Math.max(1, Math.round(request.maxCallDurationSeconds))),
    ...(settings.answeringMachineDetection
      ? { machine_detection: settings.machineAction === 'talk' ? 'continue' : 'hangup' }
      : {}),
  };
}
