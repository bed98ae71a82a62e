import { requestedRange } from './byte-range';

describe('requestedRange', () => {
  const etag = '"abc"';
  const asked = (header: string | undefined, size = 1000, ifRange?: string) => requestedRange(header, ifRange, etag, size);

  it('answers one range of bytes in part, its end kept within the artifact', () => {
    expect(asked('bytes=0-499')).toEqual({ kind: 'partial', range: { start: 0, end: 499 } });
    expect(asked('bytes=500-')).toEqual({ kind: 'partial', range: { start: 500, end: 999 } });
    expect(asked('bytes=900-5000')).toEqual({ kind: 'partial', range: { start: 900, end: 999 } });
    expect(asked('bytes=999-999')).toEqual({ kind: 'partial', range: { start: 999, end: 999 } });
    expect(asked('BYTES = 10 - 19')).toEqual({ kind: 'partial', range: { start: 10, end: 19 } });
    expect(asked('bytes=0-99999999999999999999')).toEqual({ kind: 'partial', range: { start: 0, end: 999 } });
  });

  it('answers a suffix as the last bytes, or all of them when it is longer than the artifact', () => {
    expect(asked('bytes=-100')).toEqual({ kind: 'partial', range: { start: 900, end: 999 } });
    expect(asked('bytes=-5000')).toEqual({ kind: 'partial', range: { start: 0, end: 999 } });
  });

  it('answers unsatisfiable for a start past the end, an empty suffix, or any range of an empty artifact', () => {
    expect(asked('bytes=1000-')).toEqual({ kind: 'unsatisfiable' });
    expect(asked('bytes=1000-2000')).toEqual({ kind: 'unsatisfiable' });
    expect(asked('bytes=99999999999999999999-')).toEqual({ kind: 'unsatisfiable' });
    expect(asked('bytes=-0')).toEqual({ kind: 'unsatisfiable' });
    expect(asked('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(asked('bytes=-10', 0)).toEqual({ kind: 'unsatisfiable' });
  });

  it('answers the whole artifact without a Range, for several ranges, another unit or one that does not parse', () => {
    for (const header of [undefined, 'bytes=0-1,5-9', 'items=0-5', 'bytes=', 'bytes=-', 'bytes=5-1', 'bytes=a-b', 'bytes 0-5', 'bytes=1.5-2']) {
      expect({ header, answer: asked(header) }).toEqual({ header, answer: { kind: 'whole' } });
    }
  });

  it('answers the whole artifact when If-Range names another copy, in part when it names this one', () => {
    expect(asked('bytes=0-9', 1000, '"other"')).toEqual({ kind: 'whole' });
    expect(asked('bytes=0-9', 1000, 'Tue, 01 Dec 2026 10:00:00 GMT')).toEqual({ kind: 'whole' });
    expect(asked('bytes=0-9', 1000, etag)).toEqual({ kind: 'partial', range: { start: 0, end: 9 } });
  });
});
