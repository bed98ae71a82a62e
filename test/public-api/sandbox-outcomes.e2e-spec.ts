import { agentGraph } from '../support/fixtures';
import {
  CallableOrganization,
  FINAL_STATUSES,
  seedCallableOrganization,
  startCall,
  waitForRun,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const RING_MS = 300;
const TALK_MS = 400;
const FROM_NUMBER = '+15005550006';

const NUMBERS = {
  busy: '+1 415 555 0001',
  noAnswer: '+14155550002',
  carrierFailure: '+44 20 7946 0003',
  dialRejected: '+14155550004',
  answered: '+14155552671',
} as const;

interface Observed {
  run: any;
  /** Every record read while waiting, in order. */
  history: any[];
}

describe('sandbox carrier: each outcome by the last four digits', () => {
  let apps: TestApps;
  let target: CallableOrganization;
  const results = {} as Record<keyof typeof NUMBERS, Promise<Observed>>;

  beforeAll(async () => {
    apps = await startTestApps();
    target = await seedCallableOrganization(apps.dataSource, {
      name: 'Sandbox outcomes',
      graph: (uuid) => agentGraph(uuid, { greeting: 'Hello from the sandbox.' }),
      settings: { ring_ms: RING_MS, talk_ms: TALK_MS },
    });
    for (const [name, phone] of Object.entries(NUMBERS) as Array<[keyof typeof NUMBERS, string]>) {
      results[name] = observeCall(phone);
      results[name].catch(() => undefined);
    }
  });
  afterAll(() => apps.close());

  /** Places a call and records every state the run record shows until the run is complete. */
  async function observeCall(phone: string): Promise<Observed> {
    const runId = await startCall(apps.client, target.workflow.triggerUuid, { phone_number: phone }, { key: target.org.adminKey });
    const history: any[] = [];
    const run = await waitForRun(
      apps.client,
      target.org.adminKey,
      target.workflow.workflowId,
      runId,
      (record) => record.is_completed,
      (record) => history.push(record),
    );
    return { run, history };
  }

  function statusesOf(run: any): string[] {
    return run.logs.events.filter((event: any) => event.status).map((event: any) => event.status);
  }

  function expectUnansweredEnd(run: any, status: string, endReason: string) {
    expect(run).toEqual(
      expect.objectContaining({
        status,
        end_reason: endReason,
        is_completed: true,
        answered_at: null,
        duration_seconds: null,
        transcript_url: null,
        recording_url: null,
        from_number: FROM_NUMBER,
        mode: 'sandbox',
      }),
    );
    expect(Date.parse(run.ended_at)).toBeGreaterThanOrEqual(Date.parse(run.created_at));
  }

  it('0001: ends busy after ringing, with no artifacts', async () => {
    const { run } = await results.busy;
    expectUnansweredEnd(run, 'busy', 'busy');
    expect(run.provider_call_id).toMatch(/^SB-/);
    expect(run.phone_number).toBe('+14155550001');
    expect(statusesOf(run)).toEqual(['queued', 'dialing', 'ringing', 'busy']);
  });

  it('0002: ends no_answer after ringing, with no artifacts', async () => {
    const { run } = await results.noAnswer;
    expectUnansweredEnd(run, 'no_answer', 'no_answer');
    expect(run.provider_call_id).toMatch(/^SB-/);
    expect(statusesOf(run)).toEqual(['queued', 'dialing', 'ringing', 'no_answer']);
  });

  it('0003: ends failed when the carrier fails the call, with the carrier’s reason', async () => {
    const { run } = await results.carrierFailure;
    expectUnansweredEnd(run, 'failed', 'carrier_failure');
    expect(run.provider_call_id).toMatch(/^SB-/);
    expect(statusesOf(run)).toEqual(['queued', 'dialing', 'ringing', 'failed']);
    const failure = run.logs.events.find((event: any) => event.status === 'failed');
    expect(failure).toEqual(expect.objectContaining({ event: 'carrier.failed', detail: expect.objectContaining({ reason: 'carrier_failure' }) }));
  });

  it('0004: ends failed at once when the carrier rejects the dial request, logging the carrier’s answer', async () => {
    const { run } = await results.dialRejected;
    expectUnansweredEnd(run, 'failed', 'carrier_rejected');
    expect(run.provider_call_id).toBeNull();
    expect(statusesOf(run)).toEqual(['queued', 'dialing', 'failed']);
    const failure = run.logs.events.find((event: any) => event.status === 'failed');
    expect(failure).toEqual(
      expect.objectContaining({
        event: 'carrier.rejected',
        detail: expect.objectContaining({ message: expect.any(String), carrier_code: 'SANDBOX-0004' }),
      }),
    );
  });

  it('any other number: answers, talks and completes with duration, cost, times, call id and from number', async () => {
    const { run } = await results.answered;
    expect(run).toEqual(
      expect.objectContaining({
        status: 'completed',
        end_reason: 'completed',
        is_completed: true,
        duration_seconds: TALK_MS / 1000,
        cost_info: expect.objectContaining({ call_duration_seconds: TALK_MS / 1000 }),
        provider_call_id: expect.stringMatching(/^SB-/),
        from_number: FROM_NUMBER,
        transcript_url: expect.any(String),
        recording_url: expect.any(String),
      }),
    );
    const created = Date.parse(run.created_at);
    const answered = Date.parse(run.answered_at);
    const ended = Date.parse(run.ended_at);
    expect(answered).toBeGreaterThanOrEqual(created);
    expect(ended).toBeGreaterThanOrEqual(answered);
    expect(Date.parse(run.updated_at)).toBeGreaterThanOrEqual(ended);
  });

  it('any other number: logs.events record queued → dialing → ringing → in_progress → completed in order', async () => {
    const { run } = await results.answered;
    expect(statusesOf(run)).toEqual(['queued', 'dialing', 'ringing', 'in_progress', 'completed']);
    expect(run.logs.events.filter((event: any) => event.status).map((event: any) => event.event)).toEqual([
      'run.queued',
      'dialer.dialing',
      'carrier.ringing',
      'carrier.answered',
      'carrier.completed',
    ]);
    const times = run.logs.events.map((event: any) => Date.parse(event.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it(
    'any other number: answered_at is ring_ms after the dial and ended_at - answered_at is the call’s duration',
    async () => {
      const { run } = await results.answered;
      const dialing = run.logs.events.find((event: any) => event.status === 'dialing');
      const answered = Date.parse(run.answered_at);
      const ended = Date.parse(run.ended_at);
      expect(answered - Date.parse(dialing.at)).toBeGreaterThanOrEqual(RING_MS - 20);
      expect(Math.abs(ended - answered - TALK_MS)).toBeLessThanOrEqual(100);
    },
  );

  it('is_completed turns true only once the run is final and both artifacts are stored', async () => {
    for (const name of Object.keys(NUMBERS) as Array<keyof typeof NUMBERS>) {
      const { run, history } = await results[name];
      // No record read before the run was final said it was complete.
      const open = history.filter((record) => !FINAL_STATUSES.includes(record.status));
      expect({ name, completedWhileOpen: open.filter((record) => record.is_completed).map((record) => record.status) }).toEqual({
        name,
        completedWhileOpen: [],
      });
      // The recording may be stored (uploaded by the agent runtime) before the run completes; the transcript is stored last.
      const incomplete = history.filter((record) => !record.is_completed);
      expect({ name, transcripts: incomplete.map((record) => record.transcript_url).filter((url) => url !== null) }).toEqual({ name, transcripts: [] });
      // The wait ended on the first record read complete: a final one.
      expect(history.at(-1)).toEqual(run);
      expect({ name, is_completed: run.is_completed, final: FINAL_STATUSES.includes(run.status) }).toEqual({ name, is_completed: true, final: true });
    }
    // The answered call rings and talks for 700 ms, read every 25 ms: records of it still open were seen, and the
    // complete one holds both artifacts.
    const { run, history } = await results.answered;
    expect(history.filter((record) => !FINAL_STATUSES.includes(record.status)).length).toBeGreaterThan(0);
    expect(run.status).toBe('completed');
    expect({ transcript_url: run.transcript_url, recording_url: run.recording_url }).toEqual({
      transcript_url: expect.any(String),
      recording_url: expect.any(String),
    });
    const [transcript, recording] = await Promise.all([fetch(run.transcript_url), fetch(run.recording_url)]);
    expect([transcript.status, recording.status]).toEqual([200, 200]);
  });

  it('an answered call leaves a transcript opening with the greeting and a WAV recording of the call’s length', async () => {
    const { run } = await results.answered;
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.body.turns.length).toBeGreaterThan(1);
    for (const turn of transcript.body.turns) {
      expect(turn).toEqual({ speaker: expect.stringMatching(/^(agent|user)$/), text: expect.any(String), start_ms: expect.any(Number), end_ms: expect.any(Number) });
      expect(turn.end_ms).toBeGreaterThanOrEqual(turn.start_ms);
      expect(turn.end_ms).toBeLessThanOrEqual(TALK_MS);
    }
    expect(transcript.body.turns[0]).toEqual(expect.objectContaining({ speaker: 'agent', text: 'Hello from the sandbox.' }));

    const wav = Buffer.from(await (await fetch(run.recording_url)).arrayBuffer());
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(wav.subarray(8, 12).toString('ascii')).toBe('WAVE');
    const sampleRate = wav.readUInt32LE(24);
    const bytesPerSecond = wav.readUInt32LE(28);
    const dataBytes = wav.readUInt32LE(40);
    expect(sampleRate).toBeGreaterThan(0);
    expect(dataBytes / bytesPerSecond).toBeCloseTo(run.duration_seconds, 2);
    expect(wav.length).toBe(44 + dataBytes);
  });
});
