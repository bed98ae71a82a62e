import { Logger } from '@nestjs/common';
import { ArtifactStorage } from '@app/artifacts';
import { AppConfig } from '@app/config';
import { RunReader, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { CallArtifactsRequest, CredentialsCipher, TelephonyProviders } from '@app/telephony';
import { PromptRenderer } from '@app/templating';
import { DefinitionPicker } from '../calls/definition-picker.service';
import { ConfigurationLookup } from '../lookups/configuration-lookup.service';
import { GroupedRunWrites } from '../runs/grouped-run-writes.service';
import { RECORDING_FETCHES_AT_ONCE, RecordingFetchesBusy, RunArtifactsCollector } from './run-artifacts-collector.service';

/** A collector whose collaborators are these stand-ins (no definition, so no agent opening; credentials none). */
function collectorOf(parts: {
  appendEvent: (...args: never[]) => Promise<unknown>;
  findById: (id: number) => Promise<WorkflowRun | null>;
  completeArtifacts: (...args: never[]) => Promise<boolean>;
  config: object;
  provider: object;
  put: (...args: never[]) => Promise<string>;
}): RunArtifactsCollector {
  return new RunArtifactsCollector(
    { appendEvent: parts.appendEvent, recordRecordingIfNone: async () => true } as unknown as WorkflowRunStore,
    { findById: parts.findById } as unknown as RunReader,
    { completeArtifacts: parts.completeArtifacts } as unknown as GroupedRunWrites,
    { find: async () => parts.config } as unknown as ConfigurationLookup,
    { byId: async () => null } as unknown as DefinitionPicker,
    { get: () => parts.provider } as unknown as TelephonyProviders,
    {} as PromptRenderer,
    { credentialsOf: () => null } as unknown as CredentialsCipher,
    { put: parts.put } as unknown as ArtifactStorage,
    { httpRequestTimeoutMs: 300_000 } as AppConfig,
  );
}

/**
 * The reaper's last collection of a completed run, an hour after its call,
 * whose carrier recording has not been copied yet. Everything outside the
 * collector is a stand-in: what is pinned is which failures give the
 * recording up and what the run's log (which customers read) says of them,
 * and what the copy is named (and so served) as.
 */
describe('RunArtifactsCollector copying a carrier recording', () => {
  const RUN_ID = 7;
  const SERVER_PATH = '/var/lib/voice-agent/artifacts/packs/2026-01-01/host-41-1.pack';
  let fetchRecording: jest.Mock;
  let put: jest.Mock;
  let appendEvent: jest.Mock;
  let completeArtifacts: jest.Mock;
  let warn: jest.SpyInstance;
  let collector: RunArtifactsCollector;

  beforeEach(() => {
    const endedAt = new Date(Date.now() - 2 * 3600 * 1000);
    const run = Object.assign(new WorkflowRun(), {
      id: RUN_ID,
      status: 'completed',
      isCompleted: false,
      endedAt,
      statusChangedAt: endedAt,
      telephonyConfigurationId: 1,
      provider: 'twilio',
      providerCallId: 'CA1',
      carrierRecordingUrl: 'https://api.twilio.com/2010-04-01/Accounts/AC1/Recordings/RE1',
      recordingKey: null,
      recordingUploadAdmittedAt: null,
      agentSessionStartedAt: new Date(endedAt.getTime() - 60_000),
      agentSessionEndedAt: endedAt,
      agentTranscript: [{ speaker: 'agent', text: 'Hello', start_ms: 0, end_ms: 500 }],
      gatheredContext: {},
      durationSeconds: 60,
      definitionId: null,
      initialContext: {},
    });
    fetchRecording = jest.fn(async () => ({ contentType: 'audio/wav', body: Buffer.from('RIFF\0\0\0\0WAVE') }));
    put = jest.fn(async (name: string) => `packs/2026-01-01/host-41-1.pack@0+1/${name}`);
    appendEvent = jest.fn(async () => undefined);
    completeArtifacts = jest.fn(async () => true);
    const provider = { verifyWebhook: () => undefined, fetchRecording, collectArtifacts: async () => ({ transcript: [], recording: null }) };
    const config = { id: 1, provider: 'twilio', settings: { record: true }, credentialsEncrypted: null };
    collector = collectorOf({ appendEvent, findById: async () => run, completeArtifacts, config, provider, put });
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => warn.mockRestore());

  it('keeps trying, past the give-up hour, a carrier recording our own storage failed to write, and tells the run log nothing', async () => {
    const failedDisk = Object.assign(new Error(`EIO: i/o error, write '${SERVER_PATH}'`), { code: 'EIO' });
    put.mockImplementation(async (name: string) => {
      if (name.includes('recording')) throw failedDisk;
      return `packs/2026-01-01/host-41-1.pack@0+1/${name}`;
    });

    await expect(collector.collect(RUN_ID, true, true)).rejects.toBe(failedDisk);
    expect(appendEvent).not.toHaveBeenCalled();
    expect(completeArtifacts).not.toHaveBeenCalled();
  });

  it("gives up, past the hour, a recording the carrier does not give, the error's detail in the server's log and not the run's", async () => {
    const carrierFailure = new Error(`Twilio recording download: no answer (UND_ERR_SOCKET) through ${SERVER_PATH}`);
    fetchRecording.mockRejectedValue(carrierFailure);

    await expect(collector.collect(RUN_ID, true, true)).resolves.toBe(true);
    expect(appendEvent).toHaveBeenCalledWith(RUN_ID, 'artifacts.recording_unavailable', {
      message: "The carrier's recording could not be fetched; the run is complete without it",
    });
    expect(JSON.stringify(appendEvent.mock.calls)).not.toContain(SERVER_PATH);
    expect(warn).toHaveBeenCalledWith(expect.objectContaining({ err: carrierFailure, run_id: RUN_ID }), expect.any(String));
    expect(completeArtifacts).toHaveBeenCalledWith(RUN_ID, expect.objectContaining({ recordingKey: null }));
  });

  it.each([
    ['an MP3 labelled as nothing in particular', 'binary/octet-stream', Buffer.from('ID3\x04\x00\x00', 'latin1'), 'mp3'],
    ['an MP3 labelled audio/mp3', 'audio/mp3', Buffer.from([0xff, 0xfb, 0x90, 0x64]), 'mp3'],
    ['a WAV labelled audio/mpeg', 'audio/mpeg', Buffer.from('RIFF\0\0\0\0WAVE', 'latin1'), 'wav'],
    ['bytes of no known format labelled audio/mpeg', 'audio/mpeg', Buffer.from('....'), 'mp3'],
    ['bytes of no known format labelled audio/x-wav', 'audio/x-wav', Buffer.from('....'), 'wav'],
  ])('names %s by what its bytes say first, and its label only when they say nothing', async (_case, contentType, body, extension) => {
    fetchRecording.mockResolvedValue({ contentType, body });

    await expect(collector.collect(RUN_ID, true, false)).resolves.toBe(true);
    expect(put).toHaveBeenCalledWith(`runs/0/${RUN_ID}-recording.${extension}`, body, contentType);
  });

  it('takes an empty answer for no recording: tried again before the give-up hour, left out past it, never stored', async () => {
    fetchRecording.mockResolvedValue({ contentType: 'audio/wav', body: Buffer.alloc(0) });

    await expect(collector.collect(RUN_ID, true, false)).rejects.toThrow('no bytes');
    await expect(collector.collect(RUN_ID, true, true)).resolves.toBe(true);
    expect(put).not.toHaveBeenCalledWith(expect.stringContaining('recording'), expect.anything(), expect.anything());
    expect(appendEvent).toHaveBeenCalledWith(RUN_ID, 'artifacts.recording_unavailable', expect.anything());
  });

  it('throws a carrier failure before the give-up hour, for the collection to be tried again', async () => {
    fetchRecording.mockRejectedValue(new Error('Twilio recording download: no answer (UND_ERR_SOCKET)'));

    await expect(collector.collect(RUN_ID, true, false)).rejects.toThrow('no answer');
    expect(appendEvent).not.toHaveBeenCalled();
  });
});

/**
 * A run no agent runtime reported for, on a carrier that makes its own
 * artifacts (the sandbox): what it makes is taken, its recording only when
 * the run has none, and as few recordings of long calls made at once as
 * are fetched.
 */
describe('RunArtifactsCollector taking what the carrier made', () => {
  const endedAt = new Date(Date.now() - 60_000);
  const runs = new Map<number, WorkflowRun>();
  let requests: CallArtifactsRequest[];
  let making: number;
  let mostAtOnce: number;
  let put: jest.Mock;
  let collector: RunArtifactsCollector;

  function completedRun(id: number, recordingKey: string | null): void {
    runs.set(
      id,
      Object.assign(new WorkflowRun(), {
        id,
        status: 'completed',
        isCompleted: false,
        endedAt,
        statusChangedAt: endedAt,
        telephonyConfigurationId: 1,
        provider: 'sandbox',
        providerCallId: `SB-${id}`,
        carrierRecordingUrl: null,
        recordingKey,
        recordingUploadAdmittedAt: null,
        agentSessionStartedAt: null,
        agentSessionEndedAt: null,
        agentTranscript: [],
        gatheredContext: {},
        durationSeconds: 3600,
        definitionId: null,
        initialContext: {},
      }),
    );
  }

  beforeEach(() => {
    runs.clear();
    requests = [];
    making = 0;
    mostAtOnce = 0;
    put = jest.fn(async (name: string) => `packs/2026-01-01/host-41-1.pack@0+1/${name}`);
    const provider = {
      collectArtifacts: async (request: CallArtifactsRequest) => {
        requests.push(request);
        const transcript = [{ speaker: 'agent', text: 'Hello', start_ms: 0, end_ms: 500 }];
        if (!request.withRecording) return { transcript, recording: null };
        // Making an hour of WAV takes a while, and holds it whole.
        mostAtOnce = Math.max(mostAtOnce, ++making);
        await new Promise((resolve) => setTimeout(resolve, 20));
        making -= 1;
        return { transcript, recording: { contentType: 'audio/wav', body: Buffer.from('RIFF\0\0\0\0WAVE') } };
      },
    };
    collector = collectorOf({
      appendEvent: async () => undefined,
      findById: async (id: number) => runs.get(id) ?? null,
      completeArtifacts: async () => true,
      config: { id: 1, provider: 'sandbox', settings: {}, credentialsEncrypted: null },
      provider,
      put,
    });
  });

  it(`makes at most ${RECORDING_FETCHES_AT_ONCE} recordings at once, however many runs end together`, async () => {
    const ids = Array.from({ length: 12 }, (_, index) => 100 + index);
    for (const id of ids) completedRun(id, null);

    expect(await Promise.all(ids.map((id) => collector.collect(id, true)))).toEqual(ids.map(() => true));
    expect(requests.filter((request) => request.withRecording)).toHaveLength(12);
    expect(mostAtOnce).toBe(RECORDING_FETCHES_AT_ONCE);
    expect(put).toHaveBeenCalledWith('runs/0/100-recording.wav', expect.any(Buffer), 'audio/wav');
  });

  it(`holds at most ${RECORDING_FETCHES_AT_ONCE} made recordings at once until the storage has taken them, when they are made at once`, async () => {
    // As the sandbox makes them: in one go, without waiting. The storage takes a while over each (a slow disk).
    let held = 0;
    let mostHeld = 0;
    const slowPut = jest.fn(async (name: string) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (name.endsWith('.wav')) held -= 1;
      return `packs/2026-01-01/host-41-1.pack@0+1/${name}`;
    });
    const atOnce = collectorOf({
      appendEvent: async () => undefined,
      findById: async (id: number) => runs.get(id) ?? null,
      completeArtifacts: async () => true,
      config: { id: 1, provider: 'sandbox', settings: {}, credentialsEncrypted: null },
      provider: {
        collectArtifacts: async () => {
          mostHeld = Math.max(mostHeld, ++held);
          return { transcript: [], recording: { contentType: 'audio/wav', body: Buffer.from('RIFF\0\0\0\0WAVE') } };
        },
      },
      put: slowPut,
    });
    const ids = Array.from({ length: 12 }, (_, index) => 300 + index);
    for (const id of ids) completedRun(id, null);

    expect(await Promise.all(ids.map((id) => atOnce.collect(id, true)))).toEqual(ids.map(() => true));
    expect(slowPut.mock.calls.filter(([name]) => name.endsWith('.wav'))).toHaveLength(12);
    expect(mostHeld).toBe(RECORDING_FETCHES_AT_ONCE);
  });

  it(`turns a call event away, rather than keep it waiting in its worker, while all ${RECORDING_FETCHES_AT_ONCE} turns are taken`, async () => {
    const ids = Array.from({ length: RECORDING_FETCHES_AT_ONCE + 3 }, (_, index) => 400 + index);
    for (const id of ids) completedRun(id, null);

    // The reaper's (forced) collections take every turn, then wait for one; a call event's finds none free.
    const forced = ids.slice(0, RECORDING_FETCHES_AT_ONCE + 1).map((id) => collector.collect(id, true));
    const [eventRun] = ids.slice(RECORDING_FETCHES_AT_ONCE + 1);
    const before = Date.now();
    const refused = await collector.collect(eventRun).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RecordingFetchesBusy);
    expect((refused as RecordingFetchesBusy).untilMs - before).toBeGreaterThanOrEqual(1_000);
    expect((refused as RecordingFetchesBusy).untilMs - before).toBeLessThanOrEqual(3_000 + (Date.now() - before));
    expect(requests.some((request) => request.runId === eventRun)).toBe(false);

    expect(await Promise.all(forced)).toEqual(forced.map(() => true));
    // Turns free again: the event's next try is taken.
    expect(await collector.collect(eventRun)).toBe(true);
    expect(mostAtOnce).toBe(RECORDING_FETCHES_AT_ONCE);
  });

  it('asks for no recording for a run that has one (the agent runtime uploaded it), only for its transcript', async () => {
    completedRun(200, 'packs/2026-01-01/host-41-1.pack@0+1/runs/0/200-recording.wav');

    await expect(collector.collect(200, true)).resolves.toBe(true);
    expect(requests).toEqual([expect.objectContaining({ runId: 200, withRecording: false })]);
    expect(put.mock.calls.map(([name]) => name)).toEqual(['runs/0/200-transcript.json']);
  });
});
