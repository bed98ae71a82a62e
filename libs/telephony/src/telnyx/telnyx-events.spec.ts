import { TelnyxFake } from '../../../../test/fakes/telnyx-fake';
import { ParsedWebhook } from '../carrier-webhooks';
import { parseTelnyxWebhook, telnyxOtherCall } from './telnyx-events';
import { runIdFromTelnyxClientState, telnyxClientState } from './telnyx-client-state';

const URL = 'https://calls.example.com/api/v1/telephony/telnyx/status/42';
const ID = 'v3:MdI91X4lWFEs7IgbBEOT9M4AigoY08M0WWZFISt1Yw2axZ_IiE4pqg';
const AT = '2018-02-02T22:25:27.521992Z';

describe('parseTelnyxWebhook', () => {
  const fake = new TelnyxFake();

  function parse(body: unknown): ParsedWebhook {
    return parseTelnyxWebhook(fake.signedRequest(URL, body as object));
  }

  function parseEvent(eventType: string, payload: Record<string, unknown> = {}): ParsedWebhook {
    return parse({ data: { record_type: 'event', event_type: eventType, id: 'e1', occurred_at: AT, payload: { call_control_id: ID, ...payload } } });
  }

  it('reads the documented call.hangup example: call_rejected ends the call as failed', () => {
    // The example payload of Telnyx's "Call Hangup" webhook reference.
    const documented = {
      data: {
        record_type: 'event',
        event_type: 'call.hangup',
        id: '0ccc7b54-4df3-4bca-a65a-3da1ecc777f0',
        occurred_at: '2018-02-02T22:25:27.521992Z',
        payload: {
          call_control_id: ID,
          connection_id: '7267xxxxxxxxxxxxxx',
          call_leg_id: '428c31b6-7af4-4bcb-b7f5-5013ef9657c1',
          call_session_id: '428c31b6-7af4-4bcb-b7f5-5013ef9657c1',
          client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d',
          from: '+35319605860',
          to: '+35319605860',
          start_time: '2018-02-02T22:20:27.521992Z',
          state: 'hangup',
          hangup_cause: 'call_rejected',
          hangup_source: 'caller',
          sip_hangup_cause: '603',
        },
      },
    };

    expect(parse(documented)).toEqual({
      providerCallId: ID,
      // Its client_state is someone's text, not a run id of ours.
      runId: null,
      events: [{ type: 'failed', reason: 'call_rejected', occurredAt: '2018-02-02T22:25:27.521Z' }],
    });
  });

  it('call.initiated stands for ringing (Telnyx has no ringing event for an outbound leg)', () => {
    expect(parseEvent('call.initiated', { direction: 'outgoing', state: 'bridging' }).events).toEqual([
      { type: 'ringing', occurredAt: '2018-02-02T22:25:27.521Z' },
    ]);
  });

  it('call.answered is answered', () => {
    expect(parseEvent('call.answered', { state: 'answered' })).toEqual({
      providerCallId: ID,
      runId: null,
      events: [{ type: 'answered', occurredAt: '2018-02-02T22:25:27.521Z' }],
    });
  });

  it.each([
    ['call.machine.premium.detection.ended', 'machine', 'machine'],
    ['call.machine.premium.detection.ended', 'human_residence', 'human'],
    ['call.machine.premium.detection.ended', 'human_business', 'human'],
    ['call.machine.premium.detection.ended', 'fax_detected', 'machine'],
    ['call.machine.premium.detection.ended', 'silence', 'unknown'],
    ['call.machine.detection.ended', 'human', 'human'],
    ['call.machine.detection.ended', 'machine', 'machine'],
    ['call.machine.detection.ended', 'not_sure', 'unknown'],
  ])('%s with result %s says the call was answered by a %s', (eventType, result, answeredBy) => {
    expect(parseEvent(eventType, { result }).events).toEqual([{ type: 'answered', occurredAt: '2018-02-02T22:25:27.521Z', answeredBy, answerTimeEstimated: true }]);
  });

  it.each([
    ['normal_clearing', { type: 'completed' }],
    ['time_limit', { type: 'completed', reason: 'time_limit' }],
    ['user_busy', { type: 'busy' }],
    ['timeout', { type: 'no_answer' }],
    ['no_answer', { type: 'no_answer' }],
    ['originator_cancel', { type: 'canceled' }],
    ['not_found', { type: 'failed', reason: 'invalid_number' }],
    ['unspecified', { type: 'failed', reason: 'unspecified', answerUnknown: true }],
  ])('call.hangup with hangup_cause %s', (cause, expected) => {
    expect(parseEvent('call.hangup', { hangup_cause: cause }).events).toEqual([{ ...expected, occurredAt: '2018-02-02T22:25:27.521Z' }]);
  });

  it('call.recording.saved gives the wav link to fetch', () => {
    const parsed = parseEvent('call.recording.saved', {
      recording_urls: { mp3: 'https://s3.amazonaws.com/r.mp3', wav: 'https://s3.amazonaws.com/r.wav?X-Amz-Expires=600' },
      public_recording_urls: {},
    });

    expect(parsed.events).toEqual([
      { type: 'recording', occurredAt: '2018-02-02T22:25:27.521Z', recordingUrl: 'https://s3.amazonaws.com/r.wav?X-Amz-Expires=600' },
    ]);
  });

  it('call.recording.saved falls back to mp3, and says nothing without a link', () => {
    expect(parseEvent('call.recording.saved', { recording_urls: { mp3: 'https://s3.amazonaws.com/r.mp3' } }).events[0]?.recordingUrl).toBe(
      'https://s3.amazonaws.com/r.mp3',
    );
    expect(parseEvent('call.recording.saved', { recording_urls: {} }).events).toEqual([]);
  });

  it('call.cost brings the price with its currency and the billed duration', () => {
    const parsed = parseEvent('call.cost', {
      status: 'success',
      total_cost: '0.0125',
      billed_duration_secs: 90,
      cost_parts: [{ call_part: 'call-control', billed_duration_secs: 90, cost: '0.0125', currency: 'EUR', rate: '0.0083' }],
    });

    expect(parsed.events).toEqual([
      { type: 'cost', occurredAt: '2018-02-02T22:25:27.521Z', cost: { amount: 0.0125, currency: 'EUR' }, billedSeconds: 90 },
    ]);
  });

  it('a failed cost calculation reports nothing', () => {
    expect(parseEvent('call.cost', { status: 'error', total_cost: null }).events).toEqual([]);
  });

  it('ignores events that do not move a run', () => {
    expect(parseEvent('streaming.started').events).toEqual([]);
    expect(parseEvent('call.bridged').events).toEqual([]);
  });

  it('ignores a body that is not JSON', () => {
    expect(parse('not json')).toEqual({ providerCallId: null, events: [] });
  });

  it('parses what the fake sends for its calls', () => {
    const request = fake.signedRequest(URL, fake.event('call.answered', { call_control_id: ID, client_state: 'NDI=' }));

    expect(parseTelnyxWebhook(request).providerCallId).toBe(ID);
  });
});

describe('telnyxOtherCall: whether a signed Telnyx event is about the run of its URL', () => {
  const fake = new TelnyxFake();
  const run = { id: 42, providerCallId: ID };

  function eventWith(payload: Record<string, unknown>): ParsedWebhook {
    const body = { data: { record_type: 'event', event_type: 'call.hangup', id: 'e1', occurred_at: AT, payload } };
    return parseTelnyxWebhook(fake.signedRequest(URL, body));
  }

  it("accepts an event whose client_state names the URL's run, with the run's call id or before the dial's answer stored it", () => {
    expect(telnyxOtherCall(eventWith({ call_control_id: ID, client_state: telnyxClientState(42) }), run)).toBeNull();
    expect(telnyxOtherCall(eventWith({ call_control_id: 'v3:first', client_state: telnyxClientState(42) }), { id: 42, providerCallId: null })).toBeNull();
    expect(telnyxOtherCall(eventWith({ client_state: telnyxClientState(42) }), run)).toBeNull();
  });

  it("refuses an event of another call once the run's is stored, even with the run's client_state (anyone on the account can set it)", () => {
    expect(telnyxOtherCall(eventWith({ call_control_id: 'v3:someone-elses', client_state: telnyxClientState(42) }), run)).toMatch(
      /about call v3:someone-elses, not the run's/,
    );
  });

  it("refuses an event whose client_state names another run, even with this run's call id", () => {
    expect(telnyxOtherCall(eventWith({ call_control_id: ID, client_state: telnyxClientState(43) }), run)).toMatch(/names run 43/);
  });

  it("without a client_state of ours, accepts the run's own call id and refuses any other, or none", () => {
    expect(telnyxOtherCall(eventWith({ call_control_id: ID }), run)).toBeNull();
    expect(telnyxOtherCall(eventWith({ call_control_id: ID, client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d' }), run)).toBeNull();
    expect(telnyxOtherCall(eventWith({ call_control_id: 'v3:another-call' }), run)).toMatch(/neither/);
    expect(telnyxOtherCall(eventWith({ call_control_id: ID }), { id: 42, providerCallId: null })).toMatch(/neither/);
    expect(telnyxOtherCall(eventWith({}), run)).toMatch(/neither/);
    expect(telnyxOtherCall(parseTelnyxWebhook(fake.signedRequest(URL, 'not json')), run)).toMatch(/neither/);
  });
});

describe('runIdFromTelnyxClientState', () => {
  it.each([42, 2_147_483_648, 4_294_967_296, Number.MAX_SAFE_INTEGER])('reads back the run id %d of a dial', (runId) => {
    expect(runIdFromTelnyxClientState(telnyxClientState(runId))).toBe(runId);
  });

  it.each([
    ['past 2^53, where it would round to another id', Buffer.from('9007199254740993').toString('base64')],
    ['zero-led', Buffer.from('042').toString('base64')],
    ['not digits', Buffer.from('4x').toString('base64')],
    ['empty', ''],
    ['not text', 42],
  ])('answers null for a state %s', (_, state) => {
    expect(runIdFromTelnyxClientState(state)).toBeNull();
  });
});
