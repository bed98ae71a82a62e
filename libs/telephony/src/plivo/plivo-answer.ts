import { AnswerContext, AnswerInstructions } from '../carrier-webhooks';
import { escapeXml, hangsUpOnMachine, xmlAnswer } from '../xml-answer';
import { readPlivoSettings } from './plivo-settings';

/** Plivo's `<Record maxLength>` defaults to 60 s; a session recording must last the whole call (Plivo ends calls at 24 h). */
const RECORD_MAX_SECONDS = 86_400;

/**
 * Plivo XML for an answered call. `<Stream bidirectional="true"
 * keepCallAlive="true">` sends the call's audio to the agent runtime and
 * takes the agent's audio back (μ-law 8 kHz, the telephone codec, so nothing
 * is transcoded), and holds the call until the stream ends. With recording
 * on, `<Record recordSession="true">` first records the whole session in the
 * background and reports the file to our recording URL. The stream URL keeps
 * its query (the session token); Plivo's `extraHeaders` allows only letters
 * and digits, so it carries the run id alone.
 */
export function plivoAnswer(context: AnswerContext, recordingCallbackUrl: string): AnswerInstructions {
  const settings = readPlivoSettings(context.settings);
  if (context.endCall || hangsUpOnMachine(context, settings)) {
    return xml('<Response><Hangup/></Response>');
  }
  const record = settings.record
    ? `<Record recordSession="true" redirect="false" fileFormat="wav" maxLength="${RECORD_MAX_SECONDS}" ` +
      `callbackUrl="${escapeXml(recordingCallbackUrl)}" callbackMethod="POST"/>`
    : '';
  const stream =
    '<Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" ' +
    `extraHeaders="runId=${context.runId}">${escapeXml(context.streamUrl)}</Stream>`;
  return xml(`<Response>${record}${stream}</Response>`);
}

function xml(body: string): AnswerInstructions {
  return xmlAnswer('application/xml; charset=utf-8', body);
}
