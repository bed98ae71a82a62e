import { ByteRange } from '@app/artifacts';

export type RangeAnswer =
  /** The whole artifact: no Range asked for, one this service does not answer in part (ignored, as RFC 9110 allows). */
  | { kind: 'whole' }
  | { kind: 'partial'; range: ByteRange }
  /** A byte range that starts past the end (or a suffix of none): 416. */
  | { kind: 'unsatisfiable' };

const SINGLE_RANGE = /^bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*$/i;

/**
 * What a `Range` header asks of an artifact of `size` bytes (RFC 9110
 * 14.1.2). One range of bytes is answered in part, which is what media
 * players and resumed downloads ask for (`bytes=0-`, `bytes=500-999`,
 * `bytes=-500`); several at once (a multipart answer) and anything that does
 * not parse are answered whole. `If-Range` other than the artifact's own
 * entity tag (`etag`) asks for the whole artifact too: the copy the client
 * holds part of may not be this one.
 */
export function requestedRange(header: string | undefined, ifRange: string | undefined, etag: string, size: number): RangeAnswer {
  if (header === undefined) return { kind: 'whole' };
  if (ifRange !== undefined && ifRange.trim() !== etag) return { kind: 'whole' };
  const match = SINGLE_RANGE.exec(header);
  if (!match) return { kind: 'whole' };
  const [, first, last] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    // A suffix: the last `last` bytes, or all of them when it is longer than the artifact.
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - length), end: size - 1 } };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: 'partial', range: { start, end } };
}
