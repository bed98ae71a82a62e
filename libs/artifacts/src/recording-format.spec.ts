import { recordingFormatOf } from './recording-format';

describe('recordingFormatOf', () => {
  const wav = (tag: string) => Buffer.concat([Buffer.from(tag, 'latin1'), Buffer.alloc(4), Buffer.from('WAVEfmt ', 'latin1')]);

  it('knows WAV by its RIFF or RF64 header and MP3 by an ID3 tag or a frame sync', () => {
    expect(recordingFormatOf(wav('RIFF'))).toBe('wav');
    expect(recordingFormatOf(wav('RF64'))).toBe('wav');
    expect(recordingFormatOf(Buffer.from('ID3\x04\x00', 'latin1'))).toBe('mp3');
    expect(recordingFormatOf(Buffer.from([0xff, 0xfb, 0x90, 0x64]))).toBe('mp3');
  });

  it('answers null for anything else, however it is labelled', () => {
    for (const body of [Buffer.alloc(0), Buffer.from('RIFF'), Buffer.from('<html>Access denied</html>'), Buffer.from([0xff, 0x10]), Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('AVI ')])]) {
      expect(recordingFormatOf(body)).toBeNull();
    }
  });
});
