import { AnswerInstructions } from '../carrier-webhooks';

/**
 * Telnyx Call Control never fetches an answer URL: the media stream to the
 * agent runtime is requested in the dial itself (`stream_url`), so the call
 * streams as soon as it is answered. This body exists only so the answer
 * endpoint has something harmless to say if anything ever calls it.
 */
export function telnyxAnswerInstructions(): AnswerInstructions {
  return { contentType: 'application/json', body: '{}' };
}
