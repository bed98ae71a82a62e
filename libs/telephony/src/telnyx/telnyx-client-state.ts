/**
 * Our run id, as the `client_state` of a dial: Telnyx echoes it in every
 * webhook and in the active-calls listing, which is how a call whose dial
 * answer was lost is found again by run.
 */
export function telnyxClientState(runId: number): string {
  return Buffer.from(String(runId), 'utf8').toString('base64');
}

export function runIdFromTelnyxClientState(state: unknown): number | null {
  if (typeof state !== 'string' || !state) return null;
  const decoded = Buffer.from(state, 'base64').toString('utf8');
  if (!/^[1-9][0-9]*$/.test(decoded)) return null;
  // Past 2^53 a number would round to another id: no run has such an id.
  const runId = Number(decoded);
  return Number.isSafeInteger(runId) ? runId : null;
}
