/** What a GET's preconditions ask for (RFC 9110, 13.2.2): go on, answer 304, or answer 412. */
export type ConditionalAnswer = 'proceed' | 'not_modified' | 'precondition_failed';

/**
 * Evaluates `If-Match` and `If-None-Match` against the artifact's strong
 * `etag`, in the RFC's order, for a GET or HEAD of an artifact that exists.
 * `If-Match` compares strongly (a weak tag never matches); `If-None-Match`
 * weakly, so a client that kept `W/"…"` still gets its 304. `*` matches any
 * artifact that exists. A header that holds no entity tag matches nothing.
 */
export function conditionalAnswer(ifMatch: string | undefined, ifNoneMatch: string | undefined, etag: string): ConditionalAnswer {
  if (ifMatch !== undefined && !matches(ifMatch, etag, false)) return 'precondition_failed';
  if (ifNoneMatch !== undefined && matches(ifNoneMatch, etag, true)) return 'not_modified';
  return 'proceed';
}

function matches(header: string, etag: string, weak: boolean): boolean {
  if (header.trim() === '*') return true;
  for (const [, weakPrefix, tag] of header.matchAll(/(W\/)?("[^"]*")/g)) {
    if (tag === etag && (weak || !weakPrefix)) return true;
  }
  return false;
}
