'use strict';
// Small statistics shared by the bench scenarios.

/** The middle value (the mean of the two middle ones of an even count, so it need not be one of them); NaN for none. */
function median(values) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Nearest-rank percentile, `p` from 0 to 100; NaN for none. */
function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Least-squares slope of y over x (points as [x, y]); NaN with fewer than two distinct x. */
function slope(points) {
  if (points.length < 2) return NaN;
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/**
 * Theil–Sen slope of y over x: the median of the slopes between every two
 * points (points as [x, y]); NaN with fewer than two distinct x. A steady
 * climb moves it as it moves a least-squares line; a few high samples (a
 * heap grown until its next collection) and a sawtooth caught at one phase
 * or another do not.
 */
function medianSlope(points) {
  const slopes = [];
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const dx = points[j][0] - points[i][0];
      if (dx !== 0) slopes.push((points[j][1] - points[i][1]) / dx);
    }
  }
  return median(slopes);
}

/** A number for a table cell: rounded, or a dash when missing. */
function cell(value, digits = 0) {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

module.exports = { median, percentile, slope, medianSlope, cell };
