import { PlaceCallRequest } from '../telephony-provider';
import { readTwilioSettings } from './twilio-settings';

/** Every status change Twilio can report to StatusCallback; each is sent as its own `StatusCallbackEvent` field. */
export const TWILIO_STATUS_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const;

/**
 * The body of a dial request (Call resource, "Create a Call"). `Url` is our
 * answer URL, fetched with POST when the call is answered; status changes go
 * to StatusCallback. Answering-machine detection runs synchronously, so the
 * answer request already carries `AnsweredBy` and our answer can hang up on
 * a machine before any audio flows: `Enable` returns as soon as it knows,
 * `DetectMessageEnd` waits for the greeting to end so the agent can leave a
 * message. Recording covers the whole call and is announced to our
 * recording URL once the file is ready.
 */
export function twilioDialForm(request: PlaceCallRequest): URLSearchParams {
  const settings = readTwilioSettings(request.settings);
  const form = new URLSearchParams();
  form.append('To', request.to);
  form.append('From', request.from);
  form.append('Url', request.callbacks.answerUrl);
  form.append('Method', 'POST');
  form.append('StatusCallback', request.callbacks.statusUrl);
  form.append('StatusCallbackMethod', 'POST');
  for (const event of TWILIO_STATUS_EVENTS) form.append('StatusCallbackEvent', event);
  form.append('TimeLimit', String(Math.max(1, Math.floor(request.maxCallDurationSeconds))));
  if (settings.answeringMachineDetection) {
    form.append('MachineDetection', settings.machineAction === 'talk' ? 'DetectMessageEnd' : 'Enable');
  }
  if (settings.record) {
    form.append('Record', 'true');
    form.append('RecordingStatusCallback', request.callbacks.recordingUrl);
    form.append('RecordingStatusCallbackMethod', 'POST');
    form.append('RecordingStatusCallbackEvent', 'completed');
  }
  return form;
}
