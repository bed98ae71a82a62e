import { AnswerContext, AnswerInstructions } from '../carrier-webhooks';
import { escapeXml, hangsUpOnMachine, xmlAnswer } from '../xml-answer';
import { readTwilioSettings } from './twilio-settings';


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
  if (context.endCall || hangsUpOnMachine(context, settings)) {
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

function twiml(body: string): AnswerInstructions {
  return xmlAnswer('text/xml; charset=utf-8', body);
}
