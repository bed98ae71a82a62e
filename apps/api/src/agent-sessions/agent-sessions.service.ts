import { Inject, Injectable, Logger } from '@nestjs/common';
import { ARTIFACT_STORAGE, ArtifactStorage, artifactKey, recordingFormatOf } from '@app/artifacts';
import { DomainError, isRedisUnavailable } from '@app/common';
import { APP_CONFIG, AppConfig, recordingUploadWaitMs } from '@app/config';
import {
  AGENT_DATA_LIMITS,
  AGENT_SESSION_STATUSES,
  AgentSessionCall,
  AgentSessionWrite,
  DefinitionGraph,
  WorkflowRun,
  WorkflowRunStore,
} from '@app/persistence';
import { CallEventsQueue } from '@app/queue';
import { AgentSessionTokens } from '@app/telephony';
import { PromptRenderer, renderDefinition } from '@app/templating';
import { AgentReport, readAgentReport } from './agent-event';
import { AgentSessionView } from './agent-session-view';
import { recordingUploadInProgress } from './recording-uploads';

/** A map, not an object: a type named `constructor` or `__proto__` must find nothing. */
const RECORDING_TYPES: ReadonlyMap<string, string> = new Map([
  ['audio/wav', 'wav'],
  ['audio/x-wav', 'wav'],
  ['audio/wave', 'wav'],
  ['audio/mpeg', 'mp3'],
]);

/**
 * The voice-agent runtime's side of a call. A session token is bound to one
 * run, expires, and stops working once the session was closed or the run is
 * complete, so it cannot be replayed afterwards.
 */
@Injectable()
export class AgentSessionsService {
  private readonly logger = new Logger(AgentSessionsService.name);

  constructor(
    private readonly tokens: AgentSessionTokens,
    private readonly runs: WorkflowRunStore,
    private readonly renderer: PromptRenderer,
    private readonly events: CallEventsQueue,
    @Inject(ARTIFACT_STORAGE) private readonly storage: ArtifactStorage,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.uploadWaitMs = recordingUploadWaitMs(config);
  }

  /** How long after its admission an upload may still be arriving: no other is admitted for its run meanwhile. */
  private readonly uploadWaitMs: number;

  async get(token: string): Promise<AgentSessionView> {
    const { run, definition } = await this.openSession(token);
    // A runtime has the call: wait for its report before finishing the run. Mostly the answer webhook has marked it
    // already (the row just read says so), and a second mark would be a commit that changes nothing but `updated_at`.
    if (!run.agentSessionStartedAt) await this.runs.markAgentSessionStarted(run.id);
    const agent = definition ? await this.render(definition, run) : { nodes: [], opening: '' };
    return {
      run_id: run.id,
      workflow_id: run.workflowId,
      definition_id: run.definitionId,
      agent: { opening: agent.opening, nodes: agent.nodes },
      call: {
        direction: run.callType,
        to: run.phoneNumber,
        from: run.fromNumber,
        provider: run.provider,
        provider_call_id: run.providerCallId,
      },
      initial_context: run.initialContext,
    };
  }

  /**
   * The dialer rendered the same definition with the same data before it
   * dialed, so a failure here is one of time (a busy gateway past the render
   * budget): 503, for the runtime to ask again.
   */
  private async render(definition: DefinitionGraph, run: WorkflowRun) {
    try {
      return await renderDefinition(this.renderer, definition, { initial_context: run.initialContext });
    } catch (error) {
      throw new DomainError(503, 'agent_render_failed', `The agent's prompts could not be rendered: ${(error as Error).message.split('\n')[0]}`);
    }
  }

  /**
   * Stores a report in one statement, which checks the session itself. A
   * body refused as malformed (400) still gets the session's own refusal
   * first (403, 410), as every other request on it does.
   */
  async report(token: string, body: unknown): Promise<{ accepted: number }> {
    const runId = this.grantedRunId(token);
    let report: AgentReport;
    try {
      report = readAgentReport(body);
    } catch (error) {
      assertSessionOpen(await this.runs.findById(runId));
      throw error;
    }
    const stored = await this.runs.recordAgentReport(runId, report);
    if (stored.kind !== 'stored') throw refusal(stored.kind);
    if (report.ended && stored.call) {
      // The report is stored and its session closed: failing the request would only get the runtime's retry a 410.
      // Without the nudge a call that already ended is finished by the dialer's reaper, within a minute.
      await this.nudgeArtifacts(stored.call).catch((error: unknown) => {
        const line = { err: error, run_id: runId };
        const what = 'could not tell the dialers an agent session ended; the reaper will finish the run';
        if (isRedisUnavailable(error)) this.logger.warn(line, what);
        else this.logger.error(line, what);
      });
    }
    return { accepted: (body as { events: unknown[] }).events.length };
  }

  /**
   * The checks of an upload that need no body: the gateway runs them as soon
   * as the request's head has arrived, so a bad token or type is refused
   * before up to 100 MiB of audio is read. This is where the token's expiry
   * counts: an upload admitted in time is not refused for the time its body
   * takes. Admitted, the upload is noted on the run, whose call the dialer
   * then does not finish without it while its body may still be arriving.
   * A type refused gets the session's own refusal first (403, 410), as a
   * malformed report does. `beforeNoting` may refuse the upload (the
   * gateway's own limits) before it is noted on the run.
   */
  async admitRecording(
    token: string,
    contentType: string | undefined,
    contentEncoding: string | undefined,
    beforeNoting: (runId: number) => void = () => undefined,
  ): Promise<{ runId: number; admittedAt: Date }> {
    const runId = this.grantedRunId(token);
    try {
      recordingExtension(contentType, contentEncoding);
    } catch (error) {
      assertSessionOpen(await this.runs.findById(runId));
      throw error;
    }
    beforeNoting(runId);
    const admitted = await this.runs.admitAgentRecording(runId, this.uploadWaitMs);
    if (admitted.kind === 'arriving') throw recordingUploadInProgress();
    if (admitted.kind !== 'stored') throw refusal(admitted.kind);
    return { runId, admittedAt: admitted.admittedAt };
  }

  /**
   * An upload admitted on its head that will store nothing (refused by the
   * gateway's limits, cut short, failed): its admission is forgotten, so the
   * dialer does not wait for it. Best effort: one left (the database away)
   * is waited for until the upload's timeout, as for a gateway that died.
   */
  async forgetRecordingAdmission(runId: number, admittedAt: Date): Promise<void> {
    await this.runs.forgetAgentRecordingAdmission(runId, admittedAt).catch((error: unknown) => {
      this.logger.warn({ run_id: runId, err: error }, 'could not forget a recording upload that stores nothing');
    });
  }

  /**
   * A run keeps one recording: a second upload (or one racing the first) is
   * refused, and nothing replaces the first. The token, the session and the
   * run's recording were checked on the request's head (`admitRecording`),
   * the token's expiry as of `admittedAt`; the statement that stores the
   * recording checks the session and the recording again, in case either
   * changed while the body arrived. A session the runtime ended meanwhile
   * refuses it (410); one the dialer closed to finish the call does not
   * (the upload is the run's recording, late if the run was finished).
   */
  async uploadRecording(
    token: string,
    contentType: string | undefined,
    contentEncoding: string | undefined,
    body: unknown,
    admittedAt = new Date(),
  ): Promise<{ stored: true }> {
    const runId = this.grantedRunId(token, admittedAt);
    const extension = recordingExtension(contentType, contentEncoding);
    if (!Buffer.isBuffer(body) || body.length === 0) throw new DomainError(400, 'validation_failed', 'The recording is empty');
    // Kept for good once stored (a second upload is refused), and preferred to the carrier's: it must be the audio.
    if (!startsAsRecording(extension, body)) {
      const what = extension === 'wav' ? 'a WAV file (RIFF or RF64, then WAVE)' : 'an MP3 file (an ID3 tag or an MPEG audio frame)';
      throw new DomainError(400, 'invalid_recording', `The body does not start as ${what}: upload the recording itself`);
    }
    const key = await this.storage.put(artifactKey(runId, 'recording', extension), body, contentType!);
    const stored = await this.runs.recordAgentRecording(runId, key);
    if (stored.kind !== 'stored') throw refusal(stored.kind);
    return { stored: true };
  }

  /** The run a token grants, checked without reading it (403 for a bad token, 410 for one expired `at`). */
  private grantedRunId(token: string, at = new Date()): number {
    const check = this.tokens.verify(token, Math.floor(at.getTime() / 1000));
    if (!check.ok) {
      throw check.reason === 'expired'
        ? new DomainError(410, 'session_expired', 'This agent session has expired')
        : new DomainError(403, 'session_token_invalid', 'This agent session token is not valid');
    }
    return check.grant.runId;
  }

  /**
   * The run of a token whose session is open (403 when no run has its id, 410
   * when its session is closed), with the definition it was dialed with, in
   * one round trip.
   */
  private async openSession(token: string): Promise<{ run: WorkflowRun; definition: DefinitionGraph | null }> {
    const found = await this.runs.findWithDefinition(this.grantedRunId(token));
    return { run: assertSessionOpen(found?.run ?? null), definition: found?.definition ?? null };
  }

  /** Tells the dialer the runtime is done, so a completed call can be finished now. */
  private async nudgeArtifacts(call: AgentSessionCall): Promise<void> {
    await this.events.enqueueEvent(
      {
        runId: call.runId,
        organizationId: call.organizationId,
        provider: call.provider ?? 'sandbox',
        providerCallId: call.providerCallId ?? '',
        type: 'recording',
        occurredAt: new Date().toISOString(),
      },
      0,
      `run-${call.runId}-agent-ended`,
    );
  }
}

/** A run whose agent session is open; 403 for no run (as for a bad token), 410 for a closed session. */
function assertSessionOpen(run: WorkflowRun | null): WorkflowRun {
  if (!run) throw refusal('no_run');
  if (run.isCompleted || run.agentSessionEndedAt || !AGENT_SESSION_STATUSES.includes(run.status)) throw sessionEnded();
  return run;
}

/** The answer to a request of the agent runtime refused for `kind`: the reason a read or the store gave. */
function refusal(kind: Exclude<AgentSessionWrite['kind'], 'stored'>): DomainError {
  switch (kind) {
    case 'no_run':
      return new DomainError(403, 'session_token_invalid', 'This agent session token is not valid');
    case 'closed':
      return sessionEnded();
    case 'exists':
      return recordingAlreadyStored();
    case 'full':
      return new DomainError(
        413,
        'agent_report_too_large',
        `A run keeps at most ${AGENT_DATA_LIMITS.turns} transcript turns, ${AGENT_DATA_LIMITS.bytes / 1024 / 1024} MiB of transcript and gathered context, ` +
          `and ${AGENT_DATA_LIMITS.usageNames} usage names; this report was not stored`,
      );
  }
}

function recordingAlreadyStored(): DomainError {
  return new DomainError(409, 'recording_already_stored', 'This run already has its recording; a run keeps one');
}

function sessionEnded(): DomainError {
  return new DomainError(410, 'session_ended', 'This call has ended; its agent session is closed');
}

function recordingExtension(contentType: string | undefined, contentEncoding: string | undefined): string {
  const extension = RECORDING_TYPES.get((contentType ?? '').split(';')[0].trim().toLowerCase());
  if (!extension) throw new DomainError(415, 'unsupported_media_type', 'Upload the recording as audio/wav or audio/mpeg');
  // The bytes are stored and served as they arrive: compressed, they would be served as audio they are not.
  if (contentEncoding !== undefined && contentEncoding.trim().toLowerCase() !== 'identity') {
    throw new DomainError(415, 'unsupported_media_type', 'Upload the recording without a Content-Encoding: it is stored as sent');
  }
  return extension;
}

/** Whether `body` begins as a file of its type: WAV's RIFF (or RF64) header, or MP3's ID3 tag or frame sync. */
function startsAsRecording(extension: string, body: Buffer): boolean {
  return recordingFormatOf(body) === extension;
}
