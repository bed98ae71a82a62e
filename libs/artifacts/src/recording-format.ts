export type RecordingFormat = 'wav' | 'mp3';

/**
 * What a recording's bytes say it is: WAV by its RIFF (or RF64) header,
 * MP3 by an ID3 tag or an MPEG audio frame's sync; null when neither. A
 * carrier's Content-Type is not always to be trusted for it (a storage host
 * answering `binary/octet-stream`, or `audio/mp3` for an MP3).
 */
export function recordingFormatOf(body: Buffer): RecordingFormat | null {
  const riff = body.toString('latin1', 0, 4);
  if ((riff === 'RIFF' || riff === 'RF64') && body.toString('latin1', 8, 12) === 'WAVE') return 'wav';
  if (body.toString('latin1', 0, 3) === 'ID3' || (body.length >= 2 && body[0] === 0xff && (body[1] & 0xe0) === 0xe0)) return 'mp3';
  return null;
}
