import { PlaceCallRequest } from '../telephony-provider';
import { readPlivoSettings } from './plivo-settings';

/** The JSON body of `POST /v1/Account/{auth_id}/Call/` ("Make an outbound call"). */
export interface PlivoDialBody {
  from: string;
  to: string;
  answer_url: string;
  answer_method: 'POST';
  ring_url: string;
  ring_method: 'POST';
  hangup_url: string;
  hangup_method: 'POST';
  time_limit: number;
  machine_detection?: 'true' | 'hangup';
  machine_detection_url?: string;
  machine_detection_method?: 'POST';
}

/**
 * Plivo calls answer_url when the call is answered (we answer Plivo XML),
 * ring_url when it rings and hangup_url when it ends, whatever the outcome;
 * both of those go to our status URL. Numbers are written the way Plivo's
 * reference shows them: country code and number, no "+". Answering-machine
 * detection runs in the background: Plivo reports `Machine=true|false` to
 * machine_detection_url (our status URL too) and, with `hangup`, ends the
 * call itself when a machine answered. Recording is asked for in the answer
 * XML (`<Record>`), not here.
 */
export function plivoDialBody(request: PlaceCallRequest): PlivoDialBody {
  const settings = readPlivoSettings(request.settings);
  const { answerUrl, statusUrl } = request.callbacks;
  return {
    from: plivoNumber(request.from),
    to: plivoNumber(request.to),
    answer_url: answerUrl,
    answer_method: 'POST',
    ring_url: statusUrl,
    ring_method: 'POST',
    hangup_url: statusUrl,
    hangup_method: 'POST',
    time_limit: Math.max(1, Math.floor(request.maxCallDurationSeconds)),
    ...(settings.answeringMachineDetection
      ? {
          machine_detection: settings.machineAction === 'hangup' ? 'hangup' : 'true',
          machine_detection_url: statusUrl,
          machine_detection_method: 'POST',
        }
      : {}),
  };
}

/** A number as Plivo's reference writes it: country code and number, no "+". */
export function plivoNumber(number: string): string {
  return number.startsWith('+') ? number.slice(1) : number;
}
