import { AnswerContext, AnswerInstructions } from './carrier-webhooks';
import { AnswerUrlCarrierSettings } from './answer-url-carrier-settings';

const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

/** An XML answer document (TwiML, Plivo XML) with its declaration. */
export function xmlAnswer(contentType: string, body: string): AnswerInstructions {
  return { contentType, body: `${XML_DECLARATION}${body}` };
}

/** When detection says a machine answered and the configuration says to hang up on machines. */
export function hangsUpOnMachine(context: AnswerContext, settings: AnswerUrlCarrierSettings): boolean {
  return context.answeredBy === 'machine' && settings.answeringMachineDetection && settings.machineAction === 'hangup';
}

/** Escapes text for XML content and attribute values alike. */
export function escapeXml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}
