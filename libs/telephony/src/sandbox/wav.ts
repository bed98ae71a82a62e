const SAMPLE_RATE = 8000;

export interface ToneSegment {
  startMs: number;
  endMs: number;
  frequencyHz: number;
}

/**
 * A 16-bit mono PCM WAV of `durationMs`, silent except for the given tone
 * segments: enough to be a real, playable recording of the call's length.
 */
export function renderWav(durationMs: number, segments: ToneSegment[]): Buffer {
  const samples = Math.max(0, Math.round((durationMs / 1000) * SAMPLE_RATE));
  const dataBytes = samples * 2;
  const wav = Buffer.alloc(44 + dataBytes);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(SAMPLE_RATE, 24);
  wav.writeUInt32LE(SAMPLE_RATE * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(dataBytes, 40);
  for (const segment of segments) {
    const from = Math.max(0, Math.floor((segment.startMs / 1000) * SAMPLE_RATE));
    const to = Math.min(samples, Math.floor((segment.endMs / 1000) * SAMPLE_RATE));
    for (let i = from; i < to; i++) {
      const value = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * segment.frequencyHz * i) / SAMPLE_RATE));
      wav.writeInt16LE(value, 44 + i * 2);
    }
  }
  return wav;
}
