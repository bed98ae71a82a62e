'use strict';

/** How much of an app's output may wait in this process for a slow reader before more is dropped. */
const DEFAULT_WAITING_LIMIT = 8 * 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * Copies `source` (an app's stdout or stderr) to `target` (this process's).
 * The app's output is always read, so the app never waits on it: its logger
 * writes asynchronously and would pile up what it cannot write in its own
 * memory instead. While more than `waitingLimit` bytes wait in the target (a
 * slow pipe, a pager scrolled back), what comes is dropped, in whole lines,
 * and `onDropped(bytes)` is told how much once the target has room again. A
 * target that failed (EPIPE) or closed, or that `dropped(target)` says to
 * leave alone (a terminal that went away), is written nothing more.
 */
function forwardOutput(source, target, { dropped = () => false, onDropped = () => undefined, waitingLimit = DEFAULT_WAITING_LIMIT } = {}) {
  const gone = () => dropped(target) || target.writableEnded || target.destroyed || Boolean(target.errored);
  // Whether the last byte this function handled, written or dropped, ended a line; and how much was dropped since
  // the last write.
  let atLineStart = true;
  let droppedBytes = 0;
  source.on('data', (chunk) => {
    if (gone()) return;
    let from = 0;
    if (droppedBytes > 0 && !atLineStart) {
      // Dropping ended mid-line: the rest of that line goes too.
      const end = chunk.indexOf(NEWLINE);
      from = end === -1 ? chunk.length : end + 1;
      droppedBytes += from;
    }
    if (target.writableLength > waitingLimit) {
      let upTo = from;
      if (droppedBytes === 0 && !atLineStart) {
        // The line written last is finished before dropping starts.
        const end = chunk.indexOf(NEWLINE, from);
        upTo = end === -1 ? chunk.length : end + 1;
        target.write(chunk.subarray(from, upTo));
      }
      droppedBytes += chunk.length - upTo;
    } else {
      if (droppedBytes > 0 && from < chunk.length) {
        onDropped(droppedBytes);
        droppedBytes = 0;
      }
      if (from < chunk.length) target.write(from === 0 ? chunk : chunk.subarray(from));
    }
    if (chunk.length > 0) atLineStart = chunk[chunk.length - 1] === NEWLINE;
  });
}

module.exports = { forwardOutput, DEFAULT_WAITING_LIMIT };
