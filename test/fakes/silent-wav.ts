/** A mono 8 kHz 16-bit PCM WAV of silence, at least `minimumSamples` long: what the fakes serve as a recording. */
export function silentWav(seconds: number, minimumSamples = 0): Buffer {
  const data = Buffer.alloc(Math.max(minimumSamples, Math.round(seconds * 8000)) * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}
