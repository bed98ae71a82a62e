'use strict';

/**
 * Copies `source` (an app's stdout or stderr) to `target` (this process's),
 * and holds the source back while the target is behind: read by a slow pipe,
 * a pager scrolled back. The app's own pipe then fills and its writes wait,
 * instead of this process taking in all it writes (a pipe is written
 * asynchronously, so writes nobody reads pile up in memory). A target that
 * failed (EPIPE) or closed, or that `dropped(target)` says to leave alone (a
 * terminal that went away), lets the source go on: what it writes is dropped.
 * Such a target should be sent 'drain' when `dropped` starts to hold, so a
 * source waiting on it goes on.
 */
function forwardOutput(source, target, dropped = () => false) {
  const gone = () => dropped(target) || target.writableEnded || target.destroyed || Boolean(target.errored);
  source.on('data', (chunk) => {
    if (gone() || target.write(chunk)) return;
    source.pause();
    const events = ['drain', 'error', 'close'];
    const resume = () => {
      for (const event of events) target.off(event, resume);
      source.resume();
    };
    for (const event of events) target.on(event, resume);
  });
}

module.exports = { forwardOutput };
