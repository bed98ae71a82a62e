import { AnswerContext, AnswerInstructions } from '../carrier-webhooks';
import { CallbackUrls } from '../telephony-provider';
import { VONAGE_AGENT_LEG_PARAM, VONAGE_AGENT_LEG_VALUE } from './vonage-events';
import { readVonageSettings } from './vonage-settings';

/** The agent runtime gets 16 kHz linear PCM, Vonage's WebSocket format. */
export const VONAGE_STREAM_CONTENT_TYPE = 'audio/l16;rate=16000';

/**
 * The NCCO our answer URL returns: record the call when the settings say so
 * (`record` comes first so it runs alongside), then connect the call to the
 * agent runtime's WebSocket, carrying the session token in the socket's
 * headers too. A machine that is to be hung up on gets an empty NCCO, which
 * ends the call.
 */
export function vonageAnswerInstructions(context: AnswerContext, callbacks: CallbackUrls): AnswerInstructions {
  const settings = readVonageSettings(context.settings);
  if (context.endCall || (context.answeredBy === 'machine' && settings.answeringMachineDetection && settings.machineAction === 'hangup')) {
    return json([]);
  }
  const agentLegEvents = new URL(callbacks.statusUrl);
  agentLegEvents.searchParams.set(VONAGE_AGENT_LEG_PARAM, VONAGE_AGENT_LEG_VALUE);
  const ncco: Record<string, unknown>[] = [];
  if (settings.record) {
    ncco.push({
      action: 'record',
      eventUrl: [callbacks.recordingUrl],
      eventMethod: 'POST',
      format: 'wav',
      split: 'conversation',
      channels: 2,
    });
  }
  ncco.push({
    action: 'connect',
    eventUrl: [agentLegEvents.toString()],
    eventMethod: 'POST',
    endpoint: [
      {
        type: 'websocket',
        uri: context.streamUrl,
        'content-type': VONAGE_STREAM_CONTENT_TYPE,
        headers: { run_id: context.runId, session_token: context.sessionToken },
      },
    ],
  });
  return json(ncco);
}

function json(ncco: unknown[]): AnswerInstructions {
  return { contentType: 'application/json', body: JSON.stringify(ncco) };
}
