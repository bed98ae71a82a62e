import { AnswerContext, AnswerInstructions } from '../carrier-webhooks';
import { readTwilioSettings } from './twilio-settings';

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

/**
 * TwiML for an answered call: `<Connect><Stream>` opens a bidirectional media
 * stream to the agent runtime and keeps the call up while it lasts. Twilio's
 * `<Stream url>` "does not support query string parameters", so whatever the
 * stream URL carries in its query (the session token among it) travels as
 * `<Parameter>` custom parameters instead; the runtime reads them from the
 * `start` message's `customParameters`. When detection says a machine
 * answered and the configuration says to hang up on machines, the call ends.
 */
export function twilioAnswer(context: AnswerContext): AnswerInstructions {
  const settings = readTwilioSettings(context.settings);
  if (context.answeredBy === 'machine' && settings.answeringMachineDetection && settings.machineAction === 'hangup') {
    return twiml('<Response><Hangup/></Response>');
  }
  const url = new URL(context.streamUrl);
  const parameters = new Map<string, string>();
  for (const [name, value] of url.searchParams) parameters.set(name, value);
  parameters.set('session_token', context.sessionToken);
  parameters.set('run_id', String(context.runId));
  url.search = '';
  const parameterXml = [...parameters]
    .map(([name, value]) => `<Parameter name="${escapeXml(name)}" value="${escapeXml(value)}"/>`)
    .join('');
  return twiml(`<Response><Connect><Stream url="${escapeXml(url.toString())}">${parameterXml}</Stream></Connect></Response>`);
}

/** Escapes text for XML content and attribute values alike. */
function escapeXml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function twiml(body: string): AnswerInstructions {
  return { contentType: 'text/xml; charset=utf-8', body: `${XML_DECLARATION}${body}` };
}
