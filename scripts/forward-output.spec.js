'use strict';

const { once } = require('node:events');
const { Readable, Writable } = require('node:stream');
const { forwardOutput } = require('./forward-output');

const CHUNK = 16 * 1024;
const CHUNKS = 1_000; // 16 MiB in all

/** An app writing `CHUNKS` chunks as fast as it is read. */
function appOutput(chunks = CHUNKS) {
  let index = 0;
  return new Readable({
    read() {
      this.push(index < chunks ? Buffer.alloc(CHUNK, index++ % 256) : null);
    },
  });
}

/** An output read slowly, that notes how much was ever waiting in it. */
function slowOutput() {
  const output = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk, _encoding, done) {
      output.received += chunk.length;
      output.mostWaiting = Math.max(output.mostWaiting, output.writableLength);
      setTimeout(done, 0);
    },
  });
  output.received = 0;
  output.mostWaiting = 0;
  return output;
}

describe('forwardOutput', () => {
  it("holds the app back while the output is behind: what waits stays near the output's buffer, and all of it arrives", async () => {
    const source = appOutput();
    const target = slowOutput();
    forwardOutput(source, target);
    await once(source, 'end');
    await new Promise((resolve) => target.end(resolve));
    expect(target.received).toBe(CHUNK * CHUNKS);
    // Without being held back, all 16 MiB would have waited in it at once.
    expect(target.mostWaiting).toBeLessThanOrEqual(64 * 1024 + CHUNK);
  });

  it('lets the app go on once the output has failed, writing nothing more to it', async () => {
    const source = appOutput();
    const target = slowOutput();
    target.on('error', () => undefined);
    forwardOutput(source, target);
    await once(target, 'drain');
    target.destroy(new Error('EPIPE'));
    const receivedThen = target.received;
    await once(source, 'end');
    expect(target.received).toBe(receivedThen);
    expect(target.received).toBeLessThan(CHUNK * CHUNKS);
  });

  it('lets the app go on when the output is to be left alone from a point on (a terminal gone), once told by a drain', async () => {
    const source = appOutput();
    const target = slowOutput();
    let gone = false;
    forwardOutput(source, target, () => gone);
    await once(target, 'drain');
    // Held back again at once: the output is behind, and then left alone with writes still waiting in it.
    gone = true;
    const receivedThen = target.received;
    target.cork();
    target.emit('drain');
    await once(source, 'end');
    expect(target.writableLength).toBeLessThanOrEqual(64 * 1024 + CHUNK);
    expect(target.received).toBeLessThanOrEqual(receivedThen + 64 * 1024 + CHUNK);
  });
});
