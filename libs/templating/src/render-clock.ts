/** The process gets its event loop back after this much rendering without a pause. */
export const RENDER_SLICE_MS = 20;

/**
 * The time rendering takes, apart from the turns it gives back to the event
 * loop. Liquid renders a template as one chain of promises, which holds the
 * event loop to its end: a render on this clock pauses for a turn every
 * RENDER_SLICE_MS instead (between templates, at a loop's turn, a variable
 * read, a filter or operator), and the time other work takes meanwhile is
 * not counted against the template. A template takes as long on a busy
 * dialer, with other calls placed between its slices, as on an idle gateway.
 */
export class RenderClock {
  private readonly startedAt = performance.now();
  private pausedMs = 0;
  private sliceStart = this.startedAt;

  /** Milliseconds of rendering since the clock started, its pauses left out (at `now`, when the caller has read the time). */
  elapsedMs(now = performance.now()): number {
    return now - this.startedAt - this.pausedMs;
  }

  /** A turn of the event loop to wait for when this stretch of rendering has lasted RENDER_SLICE_MS; undefined before. */
  pauseIfDue(now = performance.now()): Promise<void> | undefined {
    return now - this.sliceStart >= RENDER_SLICE_MS ? this.pause() : undefined;
  }

  private async pause(): Promise<void> {
    const started = performance.now();
    await new Promise((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
    this.pausedMs += this.sliceStart - started;
  }
}
