import { Inject, Injectable, Logger } from '@nestjs/common';
import { ARTIFACT_STORAGE, ArtifactStorage, artifactKey, recordingFormatOf } from '@app/artifacts';
import { ConcurrencyGate } from '@app/common';
import { APP_CONFIG, AppConfig, recordingUploadWaitMs } from '@app/config';
import { RunReader, TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import {
  CarrierWebhooks,
  CredentialsCipher,
  hangsUpOnMachines,
  hasWebhooks,
  isDownloadRefused,
  TelephonyProvider,
  TelephonyProviders,
} from '@app/telephony';
import { PromptRenderer, renderOpening } from '@app/templating';
import { DefinitionPicker } from '../calls/definition-picker.service';
import { ConfigurationLookup } from '../lookups/configuration-lookup.service';
import { GroupedRunWrites } from '../runs/grouped-run-writes.service';

/** How long a completed call waits for the agent runtime to close its session before it is finished anyway. */
export const AGENT_REPORT_GRACE_MS = 20_000;
/**
 * Carrier recordings a dialer fetches (or the sandbox makes) at once. Each
 * is held whole (a fetched one up to 100 MiB, a made one up to an hour of
 * WAV, 58 MB), and a dialer works up to DIALER_CONCURRENCY call events at
 * once: a burst of large recordings must not take the process' memory with it.
 */
export const RECORDING_FETCHES_AT_ONCE = 4;
/** A recording the sandbox makes of a call this long or shorter (a minute of WAV, under 1 MB) is made without waiting its turn. */
const SHORT_RECORDING_SECONDS = 60;
/** What a run's log says of a carrier recording left out; the carrier's own error goes to the dialer's log only. */
const RECORDING_UNAVAILABLE_MESSAGE = "The carrier's recording could not be fetched; the run is complete without it";
const LATE_RECORDING_UNSTORED_MESSAGE = "The carrier's recording could not be stored; the run is complete without it";

/** How long a call event whose recording found every fetch taken waits before it tries again: 1 to 3 s. */
const FETCHES_BUSY_WAIT_MS = 1_000;
const FETCHES_BUSY_JITTER_MS = 2_000;

/**
 * Every recording fetch is taken: the call event that needs one goes back to
 * its queue for a few seconds (`untilMs`) rather than wait in its worker. A
 * dialer's call-event workers (DIALER_CONCURRENCY) would otherwise all end up
 * waiting on 4 downloads of up to 2 minutes each, and the status events of
 * every other call, which free concurrency slots, behind them.
 */
export class RecordingFetchesBusy extends Error {
  readonly untilMs = Date.now() + FETCHES_BUSY_WAIT_MS + Math.floor(Math.random() * FETCHES_BUSY_JITTER_MS);

  constructor(runId: number) {
    super(`run ${runId}'s recording waits for a fetch: all ${RECORDING_FETCHES_AT_ONCE} are taken`);
    this.name = 'RecordingFetchesBusy';
  }
}

/** The carrier's recording copied into our storage (its key), or the carrier's failure to give it. */
type CarrierRecordingCopy = { key: string } | { unavailable: Error };

/**
 * Stores a completed call's transcript and recording, then marks the run
 * complete. The transcript is what the agent runtime reported; the
 * recording is the runtime's upload, else the carrier's (fetched with the
 * carrier's credentials, so `recording_url` is always ours). Safe to repeat:
 * the final update only applies once, and a repeat's copies are left
 * unreferenced in their pack.
 */
@Injectable()
export class RunArtifactsCollector {
  private readonly logger = new Logger(RunArtifactsCollector.name);
  private readonly recordingFetches = new ConcurrencyGate(RECORDING_FETCHES_AT_ONCE);
  /** How long after its admission an upload of the agent runtime's recording may still be arriving. */
  private readonly uploadWaitMs: number;

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly reader: RunReader,
    private readonly writes: GroupedRunWrites,
    private readonly configurations: ConfigurationLookup,
    private readonly definitions: DefinitionPicker,
    private readonly providers: TelephonyProviders,
    private readonly renderer: PromptRenderer,
    private readonly cipher: CredentialsCipher,
    @Inject(ARTIFACT_STORAGE) private readonly storage: ArtifactStorage,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.uploadWaitMs = recordingUploadWaitMs(config);
  }

  /**
   * `force`: finish even if the agent runtime has not closed its session (the
   * reaper, later), though not while an upload of its recording, admitted
   * when the session was open, may still be arriving: that is waited for,
   * whoever asks, for HTTP_REQUEST_TIMEOUT_MS (and Node's 30 s) from its
   * admission. `giveUpOnCarrierRecording`: a carrier recording the carrier
   * cannot give is left out (noted in the run's log) rather than keeping the
   * run from completing (the reaper, much later); one our own storage fails
   * to keep never is. True when this call finished the run.
   */
  async collect(runId: number, force = false, giveUpOnCarrierRecording = false): Promise<boolean> {
    const outcome = await this.collectOnce(runId, force, giveUpOnCarrierRecording);
    if (outcome !== 'not_stored') return outcome === 'completed';
    // Another job completed the run meanwhile (the next pass reads it so and stops), or an agent runtime that had not
    // read its session reported while the transcript was being stored, which lacks turns it was answered 200 for:
    // collected again, the run now waits for that runtime, or closes its session first. (That pass stores its
    // transcript again, and a recording the carrier's fallback gave: the first pass's copies are left unused.)
    return (await this.collectOnce(runId, force, giveUpOnCarrierRecording)) === 'completed';
  }

  /**
   * `not_ready`: nothing stored (the run not finished, complete already, or
   * waiting for a report or a recording); `not_stored`: the final write found
   * the run completed meanwhile, or holding agent turns since its read.
   */
  private async collectOnce(runId: number, force: boolean, giveUpOnCarrierRecording: boolean): Promise<'completed' | 'not_ready' | 'not_stored'> {
    const run = await this.reader.findById(runId);
    if (!run || run.status !== 'completed' || run.isCompleted) return 'not_ready';
    const sinceEnd = Date.now() - (run.endedAt ?? run.statusChangedAt).getTime();
    const config = await this.configurations.find(run.telephonyConfigurationId);
    // A machine the configuration hangs up on had nothing to say to the agent: no report is coming.
    const hungUpOnMachine = run.gatheredContext?.answered_by === 'machine' && hangsUpOnMachines(config?.settings ?? {});
    const agentStillReporting = run.agentSessionStartedAt !== null && !run.agentSessionEndedAt && !hungUpOnMachine;
    if (!force && agentStillReporting && sinceEnd < AGENT_REPORT_GRACE_MS) return 'not_ready';
    // Carriers announce their recording after the hang-up: wait for it (its event collects again; the reaper forces).
    // A completed call was answered even when its answer is not applied yet (the events' jobs run side by side) or
    // was lost, so `answered_at` cannot tell whether a recording is coming.
    const carrierRecordingDue = config?.settings.record === true && !run.recordingKey && !run.carrierRecordingUrl;
    if (!force && carrierRecordingDue && sinceEnd < AGENT_REPORT_GRACE_MS) return 'not_ready';
    // The runtime's recording is kept in place of the carrier's: its upload still arriving is waited for, forced or
    // not, before the carrier's is fetched for nothing (closing the session waits for it too, decided on the row).
    if (this.recordingUploadArriving(run)) return 'not_ready';
    const provider = this.providerOf(run, config);

    let recordingKey: string | null = null;
    if (!run.recordingKey && run.carrierRecordingUrl && hasWebhooks(provider)) {
      const copy = await this.copyCarrierRecording(run.id, run.carrierRecordingUrl, provider, config, force);
      if ('unavailable' in copy) {
        // A download refused (an address that is not public) is refused again: left out at once, not after an hour.
        if (!giveUpOnCarrierRecording && !isDownloadRefused(copy.unavailable)) throw copy.unavailable;
        await this.leaveOutCarrierRecording(run.id, copy.unavailable);
      } else {
        recordingKey = copy.key;
      }
      // Kept unless the agent runtime's upload came first: one stored while the carrier's was being fetched is the
      // run's one recording (completing the run keeps it), and one admitted meanwhile is waited for (the session is
      // not closed under it, below).
      if (recordingKey) await this.runs.recordRecordingIfNone(run.id, recordingKey, this.uploadWaitMs);
    }
    let turns: unknown[] = run.agentTranscript;
    if (run.agentSessionStartedAt !== null && !run.agentSessionEndedAt) {
      // Finished while the agent runtime still has its session (a machine hung up on, the reaper forcing it): closed
      // first, so the transcript stored holds every turn it was answered for, and a report after that is refused.
      const closed = await this.runs.closeAgentSession(run.id, this.uploadWaitMs);
      if (closed === null) return 'not_ready';
      turns = closed;
    }
    const agentTurns = turns.length;
    const withRecording = !run.recordingKey && !recordingKey;
    if (turns.length === 0 || withRecording) {
      // Nothing came from an agent runtime: take what the carrier itself has (the sandbox simulates both). A recording
      // it makes is held whole, as a carrier's fetched one is: a long one, as few at once (a short one, under 1 MB, is
      // made at once: it holds little, and every call of the dialer bench has one to make).
      const request = {
        runId: run.id,
        providerCallId: run.providerCallId ?? '',
        settings: config?.settings ?? {},
        durationSeconds: run.durationSeconds ?? 0,
        agentOpening: await this.agentOpening(run),
        withRecording,
      };
      // Made and stored in one turn of the gate: the buffer lives until the storage has taken it, and a disk slow to
      // take it must hold the next ones back, as a carrier recording's copy does.
      const makeAndStore = async () => {
        const fallback = await provider.collectArtifacts(request);
        const made = withRecording ? fallback.recording : undefined;
        const stored = made ? await this.storage.put(artifactKey(run.id, 'recording', 'wav'), made.body, made.contentType) : null;
        return { transcript: fallback.transcript, stored };
      };
      const long = withRecording && request.durationSeconds > SHORT_RECORDING_SECONDS;
      const fallback = await (long ? this.fetchTurn(run.id, makeAndStore, force) : makeAndStore());
      if (turns.length === 0) turns = fallback.transcript;
      if (fallback.stored) recordingKey = fallback.stored;
    }

    const transcriptKey = await this.storeTranscript(run.id, turns);
    // Not while an upload admitted since the run was read is arriving (the session looked unstarted then, so it was not
    // closed above): the runtime's recording is to be kept, and the next pass waits for it.
    const artifacts = { transcriptKey, recordingKey, agentTurns, uploadWaitMs: this.uploadWaitMs };
    return (await this.writes.completeArtifacts(run.id, artifacts)) ? 'completed' : 'not_stored';
  }

  private async storeTranscript(runId: number, turns: unknown[]): Promise<string> {
    const transcript = Buffer.from(JSON.stringify({ run_id: runId, turns }, null, 2));
    return this.storage.put(artifactKey(runId, 'transcript', 'json'), transcript, 'application/json');
  }

  /**
   * A carrier recording announced after the run was finished without it
   * (the reaper stops waiting for one 30 s after the hang-up) is still
   * copied into our storage, and the run's `recording_url` appears then.
   * A recording stored meanwhile, such as the agent runtime's upload, is kept.
   */
  async storeLateRecording(runId: number, lastTry = false): Promise<void> {
    const run = await this.reader.findById(runId);
    // Only a completed call's: a run that ended any other way keeps no artifacts, whatever the carrier recorded.
    if (!run || run.status !== 'completed' || !run.isCompleted || run.recordingKey || !run.carrierRecordingUrl) return;
    const config = await this.configurations.find(run.telephonyConfigurationId);
    const provider = this.providerOf(run, config);
    if (!hasWebhooks(provider)) return;
    let copy: CarrierRecordingCopy;
    try {
      copy = await this.copyCarrierRecording(run.id, run.carrierRecordingUrl, provider, config, false);
    } catch (error) {
      if (error instanceof RecordingFetchesBusy) throw error;
      // Our own storage failing. The run is complete, so no reaper comes back to it: the job's last try says so.
      if (!lastTry) throw error;
      this.logger.error({ err: error, run_id: run.id }, "a late carrier recording could not be stored, and its job's tries are spent");
      await this.runs.appendEvent(run.id, 'artifacts.recording_unavailable', { message: LATE_RECORDING_UNSTORED_MESSAGE });
      return;
    }
    if ('unavailable' in copy) {
      // The carrier's failure: tried again with the job, and on its last try left out, as a refused download at once.
      if (!isDownloadRefused(copy.unavailable) && !lastTry) throw copy.unavailable;
      await this.leaveOutCarrierRecording(run.id, copy.unavailable);
      return;
    }
    if (await this.runs.recordRecordingIfNone(run.id, copy.key)) await this.runs.appendEvent(run.id, 'artifacts.late_recording_stored');
  }

  /**
   * Whether an upload of the agent runtime's recording, admitted while its
   * session was open and not ended by the runtime since, may still be
   * arriving: the run has no recording yet, and the upload's request has
   * not reached its timeout.
   */
  private recordingUploadArriving(run: WorkflowRun): boolean {
    const admittedAt = run.recordingUploadAdmittedAt;
    return admittedAt !== null && !run.recordingKey && Date.now() - admittedAt.getTime() < this.uploadWaitMs;
  }

  /**
   * Notes in the run's log that its carrier recording is left out. Customers
   * read that log: it says what a refused download was refused for (a host
   * that is not public, named, never its address), and for any other failure
   * no more than that the carrier's recording could not be fetched. The
   * error itself, which may name our hosts or paths, goes to the dialer's log.
   */
  private async leaveOutCarrierRecording(runId: number, error: Error): Promise<void> {
    this.logger.warn({ err: error, run_id: runId }, "left a run's carrier recording out");
    await this.runs.appendEvent(runId, 'artifacts.recording_unavailable', {
      message: isDownloadRefused(error) ? error.message : RECORDING_UNAVAILABLE_MESSAGE,
    });
  }

  private providerOf(run: WorkflowRun, config: TelephonyConfiguration | null): TelephonyProvider {
    return this.providers.get(run.provider ?? config?.provider ?? 'sandbox');
  }

  /**
   * Fetches the carrier's recording with the configuration's credentials and
   * stores it (MP3 or WAV, as sent); answers its key, or the carrier's
   * failure to give it. Our own storage failing (a full or failing disk) is
   * thrown: not the carrier's doing, and no reason to leave the recording out.
   */
  private async copyCarrierRecording(
    runId: number,
    url: string,
    provider: CarrierWebhooks,
    config: TelephonyConfiguration | null,
    waitForTurn: boolean,
  ): Promise<CarrierRecordingCopy> {
    // Read whole into memory (up to 100 MiB each): a few at a time, however many calls end at once.
    return this.fetchTurn(runId, async (): Promise<CarrierRecordingCopy> => {
      let recording: { contentType: string; body: Buffer };
      try {
        recording = await provider.fetchRecording(url, this.cipher.credentialsOf(config));
      } catch (error) {
        return { unavailable: error instanceof Error ? error : new Error(String(error)) };
      }
      // An empty answer is no recording (one not made yet, a proxy's): tried again as a carrier that did not give it,
      // and left out past the give-up hour, rather than stored and served as a file of no sound.
      if (recording.body.length === 0) return { unavailable: new Error('the carrier answered the recording with no bytes') };
      // Named (and so served) as its bytes say, and as its Content-Type says only when they say nothing.
      const format = recordingFormatOf(recording.body) ?? (/mpeg|mp3/i.test(recording.contentType) ? 'mp3' : 'wav');
      const name = artifactKey(runId, 'recording', format);
      return { key: await this.storage.put(name, recording.body, recording.contentType) };
    }, waitForTurn);
  }

  /**
   * Runs a recording fetch (or a long recording made) in one of the
   * RECORDING_FETCHES_AT_ONCE turns: waiting for one (the reaper, which works
   * its runs one by one), or, for a call event, only if one is free now;
   * else `RecordingFetchesBusy`.
   */
  private fetchTurn<T>(runId: number, task: () => Promise<T>, waitForTurn: boolean): Promise<T> {
    if (waitForTurn) return this.recordingFetches.run(task);
    const turn = this.recordingFetches.tryRun(task);
    if (!turn) throw new RecordingFetchesBusy(runId);
    return turn;
  }

  private async agentOpening(run: WorkflowRun): Promise<string> {
    const definition = await this.definitions.byId(run.definitionId);
    if (!definition) return '';
    return renderOpening(this.renderer, definition.definition, { initial_context: run.initialContext });
  }
}
