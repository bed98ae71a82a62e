'use strict';

const { once } = require('node:events');
const { Readable, Writable } = require('node:stream');
const { forwardOutput } = require('./forward-output');

const LIMIT = 64 * 1024;

/**
 * An app writing `lines` JSON log lines, cut into chunks of 1,000 bytes across lines, one chunk a turn of the event
 * loop; `ended` settles when all of it was read.
 */
function appOutput(lines) {
  const text = Buffer.from(Array.from({ length: lines }, (_, index) => `${JSON.stringify({ line: index, msg: 'x'.repeat(index % 300) })}\n`).join(''));
  let at = 0;
  const source = new Readable({
    read() {
      setImmediate(() => this.push(at < text.length ? text.subarray(at, (at += 1000)) : null));
    },
  });
  return { source, bytes: text.length, ended: once(source, 'end') };
}

/** An output taking a chunk at once, or every `delayMs`; keeps all it took, and notes how much ever waited in it. */
function output(delayMs) {
  const target = new Writable({
    write(chunk, _encoding, done) {
      target.taken.push(chunk);
      target.mostWaiting = Math.max(target.mostWaiting, target.writableLength);
      if (delayMs === undefined) done();
      else setTimeout(done, delayMs);
    },
  });
  target.taken = [];
  target.mostWaiting = 0;
  target.text = () => Buffer.concat(target.taken).toString();
  return target;
}

const linesOf = (text) => text.split('\n').slice(0, -1).map((line) => JSON.parse(line).line);

describe('forwardOutput', () => {
  it('copies everything, in order, to an output that keeps up', async () => {
    const { source, bytes, ended } = appOutput(2_000);
    const target = output();
    const dropped = [];
    forwardOutput(source, target, { waitingLimit: LIMIT, onDropped: (count) => dropped.push(count) });
    await ended;
    await new Promise((resolve) => target.end(resolve));
    expect(target.text().length).toBe(bytes);
    expect(linesOf(target.text())).toEqual(Array.from({ length: 2_000 }, (_, index) => index));
    expect(dropped).toEqual([]);
  });

  it('reads on past a slow output, keeping what waits in it near the limit, and drops whole lines, saying how much', async () => {
    const { source, bytes, ended } = appOutput(5_000);
    const target = output(5);
    const dropped = [];
    forwardOutput(source, target, { waitingLimit: LIMIT, onDropped: (count) => dropped.push(count) });
    // The app's output is read to its end however slowly the output takes it.
    await ended;
    await new Promise((resolve) => target.end(resolve));
    expect(target.mostWaiting).toBeLessThanOrEqual(LIMIT + 2_000);
    const text = target.text();
    // Every line that came through is whole and in order; the rest were dropped and counted.
    const lines = linesOf(text);
    expect(lines.length).toBeLessThan(5_000);
    expect([...lines].sort((a, b) => a - b)).toEqual(lines);
    expect(text.endsWith('\n')).toBe(true);
    expect(dropped.length).toBeGreaterThan(0);
    // The last drop is told only when something is written after it.
    expect(dropped.reduce((sum, count) => sum + count, 0)).toBeLessThanOrEqual(bytes - text.length);
  });

  it('writes nothing more to an output that failed, or that is to be left alone from a point on, and reads on', async () => {
    for (const stop of ['failed', 'left alone']) {
      const { source, ended } = appOutput(5_000);
      const target = output(5);
      target.on('error', () => undefined);
      let leftAlone = false;
      forwardOutput(source, target, { waitingLimit: LIMIT, dropped: () => leftAlone });
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (stop === 'failed') target.destroy(new Error('EPIPE'));
      else leftAlone = true;
      const takenThen = target.text().length;
      const waitingThen = target.writableLength;
      await ended;
      expect(target.writableLength).toBeLessThanOrEqual(waitingThen);
      if (stop === 'left alone') await new Promise((resolve) => target.end(resolve));
      // What it takes after the stop is what was waiting in it then, and nothing written since.
      expect(target.text().length).toBeLessThanOrEqual(takenThen + waitingThen);
    }
  });
});
