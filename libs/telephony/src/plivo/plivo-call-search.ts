import { DialWindow } from '../dial-window';
import { DialAttempt } from '../telephony-provider';
import { PlivoApi } from './plivo-api';
import { PlivoCredentials } from './plivo-credentials';
import { plivoNumber } from './plivo-dial';
import { PlivoCallRecord, PlivoLiveCall, plivoTimeMs } from './plivo-status';

/** A call found for a dial, as Plivo has it now. */
export type PlivoDialedCall =
  | { state: 'queued' | 'live'; providerCallId: string; call: PlivoLiveCall }
  | { state: 'ended'; providerCallId: string; record: PlivoCallRecord };

/** Plivo's largest page. */
const PAGE_SIZE = 20;
const MAX_PAGES = 3;

/**
 * Finds the call a dial created when its request UUID was never learned.
 * Plivo keeps nothing of ours that it lets us search by, so the call is known
 * by what the dial asked for: the same numbers, outbound, started between
 * sending the request and giving up on it. A queued call has no time yet; a
 * queued call with our numbers counts too. One such call is ours. None,
 * several, or more than we read, and nothing tells which is ours: `null`,
 * never a guess.
 *
 * Three reads, in the order a call moves (queued, live, ended), so a call
 * that moves on between two reads is seen by the later one. A call Plivo is
 * dialing but that does not ring yet is in none of them.
 */
export async function findDialedPlivoCall(
  api: PlivoApi,
  credentials: PlivoCredentials,
  dial: DialAttempt,
  requestTimeoutMs: number,
): Promise<PlivoDialedCall | null> {
  const dialWindow = new DialWindow(dial, requestTimeoutMs);
  const to = plivoNumber(dial.to);
  const from = plivoNumber(dial.from);
  const sameNumbers = (callTo: string | undefined, callFrom: string | undefined) =>
    callTo !== undefined && callFrom !== undefined && plivoNumber(callTo) === to && plivoNumber(callFrom) === from;
  const inWindow = (time: string | null | undefined) => {
    const ms = plivoTimeMs(time);
    return ms === null || dialWindow.contains(ms);
  };
  const outbound = (direction: string | undefined) => direction === undefined || direction === 'outbound';
  // Keyed by CallUUID: a call seen twice (it moved on between reads) is one call, as the later read saw it.
  const found = new Map<string, PlivoDialedCall>();

  const queuedIds = await readIds((page) => api.queuedCallIds(credentials, page));
  if (!queuedIds) return null;
  for (const id of queuedIds) {
    const call = await api.queuedCall(credentials, id);
    if (call && sameNumbers(call.to, call.from) && outbound(call.direction)) found.set(call.call_uuid ?? id, dialed('queued', id, call));
  }

  const liveIds = await readIds((page) => api.liveCallIds(credentials, { fromNumber: from, toNumber: to }, page));
  if (!liveIds) return null;
  for (const id of liveIds) {
    const call = await api.liveCall(credentials, id);
    if (call && sameNumbers(call.to, call.from) && outbound(call.direction) && inWindow(call.session_start)) {
      found.set(call.call_uuid ?? id, dialed('live', id, call));
    }
  }

  for (let page = 0; ; page++) {
    if (page >= MAX_PAGES) return null;
    const records = await api.listCallRecords(
      credentials,
      new URLSearchParams({
        call_direction: 'outbound',
        from_number: from,
        to_number: to,
        // A call started in the window ended after its start.
        end_time__gte: plivoFilterTime(dialWindow.earliest),
        limit: String(PAGE_SIZE),
        offset: String(page * PAGE_SIZE),
      }),
    );
    for (const record of records.objects ?? []) {
      if (!record?.call_uuid || !sameNumbers(record.to_number, record.from_number) || !outbound(record.call_direction)) continue;
      // A record without a start time cannot be placed in the window; the dial's own call always has one.
      if (!record.initiation_time || !inWindow(record.initiation_time)) continue;
      found.set(record.call_uuid, { state: 'ended', providerCallId: record.call_uuid, record });
    }
    if (!records.meta?.next) break;
  }
  return DialWindow.onlyCall(found);
}

function dialed(state: 'queued' | 'live', id: string, call: PlivoLiveCall): PlivoDialedCall {
  return { state, providerCallId: call.request_uuid || call.call_uuid || id, call };
}

/** Every id a paged id list holds, or null when there are more than we read. */
async function readIds(read: (page: { limit: number; offset: number }) => Promise<string[]>): Promise<string[] | null> {
  const ids = new Set<string>();
  for (let page = 0; page < MAX_PAGES; page++) {
    const batch = await read({ limit: PAGE_SIZE, offset: page * PAGE_SIZE });
    const before = ids.size;
    for (const id of batch) ids.add(id);
    // A short page, or one that adds nothing (an API that ignores offset), is the end.
    if (batch.length < PAGE_SIZE || ids.size === before) return [...ids];
  }
  return null;
}

/** `YYYY-MM-DD HH:MM:ss` in UTC, as Plivo's time filters take it. */
function plivoFilterTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}
