import { VonageFake } from '../../../../test/fakes/vonage-fake';
import { ParsedWebhook, WebhookKind, WebhookRun } from '../carrier-webhooks';
import { parseVonageWebhook, vonageOtherCall, vonageTime } from './vonage-events';

const STATUS_URL = 'https://calls.example.com/api/v1/telephony/vonage/status/42';
const UUID = 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab';
const AT = '2020-01-01T14:00:00.000Z';

describe('parseVonageWebhook', () => {
  const fake = new VonageFake();

  function parse(body: unknown, kind: WebhookKind = 'status', url = STATUS_URL): ParsedWebhook {
    return parseVonageWebhook(kind, fake.signedRequest(url, body as object));
  }

  it.each([
    ['ringing', { type: 'ringing' }],
    ['answered', { type: 'answered' }],
    ['human', { type: 'answered', answeredBy: 'human', answerTimeEstimated: true }],
    ['machine', { type: 'answered', answeredBy: 'machine', answerTimeEstimated: true }],
    ['busy', { type: 'busy' }],
    ['timeout', { type: 'no_answer' }],
    ['unanswered', { type: 'no_answer' }],
    ['cancelled', { type: 'canceled' }],
    ['rejected', { type: 'failed', reason: 'call_rejected' }],
    ['failed', { type: 'failed', reason: 'carrier_failed' }],
  ])('status %s', (status, expected) => {
    expect(parse({ uuid: UUID, conversation_uuid: 'CON-1', status, direction: 'outbound', timestamp: AT })).toEqual({
      providerCallId: UUID,
      events: [{ ...expected, occurredAt: AT }],
    });
  });

  it('a failure keeps its detail as the reason', () => {
    expect(parse({ uuid: UUID, status: 'failed', detail: 'invalid_number', timestamp: AT }).events[0].reason).toBe('invalid_number');
    expect(parse({ uuid: UUID, status: 'rejected', detail: 'cannot_route', timestamp: AT }).events[0].reason).toBe('unreachable');
    expect(parse({ uuid: UUID, status: 'failed', detail: 'something_new', timestamp: AT }).events[0].reason).toBe('something_new');
  });

  it('completed brings its duration in whole seconds, and leaves out one that is negative or not a number', () => {
    const durationOf = (duration: unknown) =>
      (parse({ uuid: 'u', status: 'completed', duration, timestamp: AT }).events[0] as { durationSeconds?: number }).durationSeconds;
    expect(durationOf('12.7')).toBe(13);
    expect(durationOf(42)).toBe(42);
    expect(durationOf('-3')).toBeUndefined();
    expect(durationOf('soon')).toBeUndefined();
    expect(durationOf({ seconds: 4 })).toBeUndefined();
  });

  it('completed brings the duration and the price in euros', () => {
    const parsed = parse({
      start_time: '2020-01-01T13:59:00.000Z',
      rate: '0.01350000',
      from: '447700900001',
      to: '447700900000',
      uuid: UUID,
      conversation_uuid: 'CON-1',
      status: 'completed',
      direction: 'outbound',
      timestamp: AT,
      network: '23410',
      duration: '60',
      price: '0.01350000',
      end_time: AT,
    });

    expect(parsed.events).toEqual([{ type: 'completed', occurredAt: AT, durationSeconds: 60, cost: { amount: 0.0135, currency: 'EUR' } }]);
  });

  it('a record event says where the recording is', () => {
    const parsed = parse(
      {
        start_time: '2020-01-01T12:00:00Z',
        recording_url: 'https://api.nexmo.com/v1/files/bbbbbbbb-aaaa-cccc-dddd-0123456789ab',
        size: 12222,
        recording_uuid: 'cccccccc-bbbb-aaaa-dddd-0123456789ab',
        end_time: '2020-01-01T12:01:00Z',
        conversation_uuid: 'CON-1',
        timestamp: AT,
      },
      'recording',
    );

    expect(parsed).toEqual({
      providerCallId: null,
      events: [{ type: 'recording', occurredAt: AT, recordingUrl: 'https://api.nexmo.com/v1/files/bbbbbbbb-aaaa-cccc-dddd-0123456789ab' }],
    });
  });

  it('the answer request names the call and moves nothing', () => {
    expect(parse({ to: '447700900000', from: '447700900001', uuid: UUID, conversation_uuid: 'CON-1' }, 'answer')).toEqual({
      providerCallId: UUID,
      events: [],
    });
  });

  it("ignores the agent WebSocket leg's own events", () => {
    expect(parse({ uuid: 'websocket-leg', status: 'completed', duration: '5', timestamp: AT }, 'status', `${STATUS_URL}?leg=agent`)).toEqual({
      providerCallId: 'websocket-leg',
      events: [],
    });
  });

  it('ignores started and unknown statuses, and bodies that are not JSON objects', () => {
    expect(parse({ uuid: UUID, status: 'started', timestamp: AT }).events).toEqual([]);
    expect(parse({ uuid: UUID, status: 'transfer', timestamp: AT }).events).toEqual([]);
    expect(parse('[1,2]')).toEqual({ providerCallId: null, events: [] });
    expect(parse('nope')).toEqual({ providerCallId: null, events: [] });
  });
});

describe('vonageOtherCall: whether a signed Vonage event is about the run of its URL', () => {
  const fake = new VonageFake();
  const run: WebhookRun = { id: 42, providerCallId: UUID };
  const other = 'ffffffff-bbbb-cccc-dddd-0123456789ab';

  function check(body: object, url = STATUS_URL, kind: WebhookKind = 'status', about = run): string | null {
    const request = fake.signedRequest(url, body);
    return vonageOtherCall(kind, parseVonageWebhook(kind, request), about, request);
  }

  it("accepts the run's own call, on the event and the answer URLs", () => {
    expect(check({ uuid: UUID, status: 'completed', timestamp: AT })).toBeNull();
    expect(check({ uuid: UUID, conversation_uuid: 'CON-1' }, STATUS_URL.replace('/status/', '/answer/'), 'answer')).toBeNull();
  });

  it('refuses an event or an answer request of another call', () => {
    expect(check({ uuid: other, status: 'completed', timestamp: AT })).toMatch(/another|not the run's/);
    expect(check({ uuid: other, conversation_uuid: 'CON-2' }, STATUS_URL.replace('/status/', '/answer/'), 'answer')).toMatch(/not the run's/);
  });

  it("cannot check, and accepts: before the run's call id is stored, the agent leg's own events, a recording event", () => {
    expect(check({ uuid: other, status: 'ringing', timestamp: AT }, STATUS_URL, 'status', { id: 42, providerCallId: null })).toBeNull();
    expect(check({ uuid: 'websocket-leg', status: 'completed', timestamp: AT }, `${STATUS_URL}?leg=agent`)).toBeNull();
    expect(check({ recording_url: 'https://api.nexmo.com/v1/files/x', conversation_uuid: 'CON-2', timestamp: AT }, STATUS_URL, 'recording')).toBeNull();
  });

  it("refuses another call's answer request sent with the agent leg's mark: the query is not signed, and the answer carries the session", () => {
    const answerUrl = `${STATUS_URL.replace('/status/', '/answer/')}?leg=agent`;
    expect(check({ uuid: other, conversation_uuid: 'CON-2' }, answerUrl, 'answer')).toMatch(/not the run's/);
    expect(check({ uuid: UUID, conversation_uuid: 'CON-1' }, answerUrl, 'answer')).toBeNull();
  });
});

describe('vonageTime', () => {
  it('reads ISO 8601 and the "YYYY-MM-DD HH:MM:SS" (UTC) of call details', () => {
    expect(vonageTime('2020-01-01T14:00:00.000Z')).toBe('2020-01-01T14:00:00.000Z');
    expect(vonageTime('2020-01-01 12:00:00')).toBe('2020-01-01T12:00:00.000Z');
    expect(vonageTime('yesterday')).toBeNull();
  });
});
