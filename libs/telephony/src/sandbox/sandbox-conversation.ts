import { TranscriptTurn } from '../telephony-provider';

/** The built-in agent opens with its greeting; the simulated callee answers and says goodbye. */
export function sandboxConversation(agentOpening: string, durationMs: number): TranscriptTurn[] {
  const lines: Array<[TranscriptTurn['speaker'], string]> = [
    ['agent', agentOpening],
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
