import { DialWindow } from '../dial-window';
import { DialAttempt } from '../telephony-provider';
import { TwilioApi, TwilioCallPage } from './twilio-api';
import { TwilioCredentials } from './twilio-credentials';
import { TwilioCallResource } from './twilio-status';

const PAGE_SIZE = 50;
const MAX_PAGES = 4;

/**
 * Finds the call a dial created when its SID was never learned. Twilio keeps
 * nothing of ours on a call (not even the callback URLs), so the call is
 * known by what the dial asked for: the same To and From, created by our
 * account ("outbound-api") between sending the request and giving up on it.
 * One such call is ours. None, several, or more than we read, and nothing
 * tells which is ours: `null`, never a guess.
 *
 * Two reads: calls still `queued` (not dialed yet, so without the start time
 * the other filter needs), then calls started since the dial's day (UTC). A
 * call that leaves the queue between the two reads is in the second.
 */
export async function findDialedTwilioCall(
  api: TwilioApi,
  credentials: TwilioCredentials,
  dial: DialAttempt,
  requestTimeoutMs: number,
): Promise<TwilioCallResource | null> {
  const dialWindow = new DialWindow(dial, requestTimeoutMs);
  const filters = (extra: Record<string, string>) =>
    new URLSearchParams({ To: dial.to, From: dial.from, ...extra, PageSize: String(PAGE_SIZE) });

  const queued = await readAllPages(api, credentials, filters({ Status: 'queued' }));
  const started = queued && (await readAllPages(api, credentials, filters({ 'StartTime>': utcDay(dialWindow.earliest) })));
  if (!queued || !started) return null;

  const candidates = new Map<string, TwilioCallResource>();
  for (const call of [...queued, ...started]) {
    const created = Date.parse(call.date_created ?? '');
    const sameDial = call.to === dial.to && call.from === dial.from && (call.direction ?? 'outbound-api') === 'outbound-api';
    // A later read overwrites an earlier one: the call as it is now.
    if (sameDial && dialWindow.contains(created)) candidates.set(call.sid, call);
  }
  return DialWindow.onlyCall(candidates);
}

/** Every call the filters select, or null when there are more pages than we read. */
async function readAllPages(api: TwilioApi, credentials: TwilioCredentials, filters: URLSearchParams): Promise<TwilioCallResource[] | null> {
  const calls: TwilioCallResource[] = [];
  let page: TwilioCallPage = await api.listCalls(credentials, filters);
  for (let read = 1; ; read++) {
    calls.push(...(page.calls ?? []).filter((call) => typeof call?.sid === 'string'));
    if (!page.next_page_uri) return calls;
    if (read >= MAX_PAGES) return null;
    page = await api.nextCallPage(credentials, page.next_page_uri);
  }
}

/** `YYYY-MM-DD` in UTC, as Twilio's StartTime filters take it. */
function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
