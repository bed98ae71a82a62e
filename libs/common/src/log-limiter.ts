/**
 * One log line per `intervalMs` at most, for something that can happen many
 * times a second while a dependency is away; the occasions in between are
 * counted, and the next line says how many were left out.
 */
export class LogLimiter {
  private loggedAt = Number.NEGATIVE_INFINITY;
  private unlogged = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** How many were left out since the last line, when this one is to be logged; null (and counted) when it is not. */
  admit(): number | null {
    const at = this.now();
    if (at - this.loggedAt < this.intervalMs) {
      this.unlogged++;
      return null;
    }
    const leftOut = this.unlogged;
    this.loggedAt = at;
    this.unlogged = 0;
    return leftOut;
  }
}
