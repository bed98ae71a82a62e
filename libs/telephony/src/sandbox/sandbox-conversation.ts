import { AGENT_DATA_LIMITS } from '@app/persistence';
import { TranscriptTurn } from '../telephony-provider';

/**
 * The built-in agent opens with its greeting (the prompt when there is
 * none); the simulated callee answers and says goodbye. An opening longer
 * than a reported turn may be is said up to that length, not split across
 * the agent's three: a greeting of 10,000 characters is a quarter of an
 * hour's speech.
 */
export function sandboxConversation(agentOpening: string, durationMs: number): TranscriptTurn[] {
  const lines: Array<[TranscriptTurn['speaker'], string]> = [
    ['agent', upTo(agentOpening, AGENT_DATA_LIMITS.turnChars)],
    ['user', 'Hello, yes, speaking.'],
    ['agent', 'Thank you for your time. Goodbye!'],
    ['user', 'Goodbye.'],
  ];
  const slot = durationMs / lines.length;
  return lines.map(([speaker, text], index) => ({
    speaker,
    text,
    start_ms: Math.round(index * slot),
    end_ms: Math.round(index * slot + slot * 0.8),
  }));
}

/** `text`'s first `length` UTF-16 units at most, not cutting a character written as a surrogate pair in two. */
function upTo(text: string, length: number): string {
  if (text.length <= length) return text;
  const last = text.charCodeAt(length - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
}
