import { Inject, Injectable, Logger } from '@nestjs/common';
import { DomainError, Errors, MAX_RUN_ID, parseStoredId } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { isFinalRunStatus, TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { callEventJobId, CallEventsQueue, RedisClient } from '@app/queue';
import {
  AgentSessionTokens,
  agentStreamFor,
  AnswerInstructions,
  CarrierWebhooks,
  CredentialsCipher,
  hangsUpOnMachines,
  hasWebhooks,
  ParsedWebhook,
  TelephonyProviders,
  WebhookKind,
  WebhookRejected,
  WebhookRequest,
} from '@app/telephony';

/** How long a delivered webhook is remembered, so an exact replay of it is refused. */
const REPLAY_MEMORY_MS = 24 * 60 * 60 * 1000;
/**
 * How long a delivery is held as being handled: far longer than handling
 * takes (a few queue writes and database reads, within the request's
 * timeout). A gateway that stopped mid-way leaves the mark to lapse, and
 * the carrier's retry is taken after it.
 */
const HANDLING_MEMORY_MS = 2 * 60 * 1000;
const HANDLING = 'handling';
const HANDLED = 'handled';

/**
 * Receives a carrier's callbacks for one run. The signature is verified
 * before anything else; the events are handed to the dialer through the
 * call-events queue and applied there by the same state machine as every
 * other carrier's. The answer callback is told to stream the call's audio
 * to the agent runtime, with a session token for this run.
 *
 * Anyone can call these URLs, so until a request is validly signed for its
 * run, the answer says nothing about the run: a request without the
 * carrier's signature headers is a 401 whatever its run id, and one whose
 * signature cannot be verified for the run (no such run, another carrier's,
 * a configuration without credentials, a bad signature) gets one and the
 * same 403. The reason is logged, for whoever set the carrier up. Where
 * the signature covers the body but not the URL (Telnyx, Vonage), a
 * genuine event of another call posted here is refused with it too.
 */
@Injectable()
export class TelephonyWebhooksService {
  private readonly logger = new Logger(TelephonyWebhooksService.name);

  constructor(
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly events: CallEventsQueue,
    private readonly sessions: AgentSessionTokens,
    private readonly runs: WorkflowRunStore,
    private readonly redis: RedisClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** `runIdParam` as the URL has it: an id that cannot name a run is refused like one that names no run. */
  async receive(providerName: string, kind: WebhookKind, runIdParam: string, request: WebhookRequest): Promise<AnswerInstructions | null> {
    const provider = this.providers.has(providerName) ? this.providers.get(providerName) : null;
    if (!provider || !hasWebhooks(provider)) throw Errors.notFound('provider_not_found', `No carrier named "${providerName}" takes webhooks`);
    assertSigned(provider, request);
    // An id that cannot name a run (malformed, past the column's range) is refused like one that names no run.
    const storedId = parseStoredId(runIdParam, MAX_RUN_ID);
    const runId = typeof storedId === 'number' ? storedId : null;
    const found = runId === null ? null : await this.runs.findWithConfiguration(runId);
    const run = found?.run;
    if (!run || run.provider !== providerName) {
      throw this.unverifiable(providerName, runIdParam, run ? `the run is a call of ${run.provider}` : 'no run has this id');
    }
    const config = found.configuration;
    const credentials = this.cipher.credentialsOf(config);
    try {
      provider.verifyWebhook(request, credentials, Date.now());
    } catch (error) {
      if (error instanceof WebhookRejected) {
        if (error.status === 401) throw unsigned(error);
        throw this.unverifiable(providerName, runIdParam, error.message);
      }
      throw error;
    }
    const parsed = parseOrRefuse(provider, kind, request);
    // A signature that does not cover the URL (Telnyx, Vonage) leaves the body to say whose call it is.
    const otherCall = provider.otherCallThan?.(kind, parsed, { id: run.id, providerCallId: run.providerCallId }, request);
    if (otherCall) throw this.unverifiable(providerName, runIdParam, otherCall);
    const replayKey = await this.rememberDelivery(provider, request, config?.id ?? 0);
    try {
      const answer = await this.accept(provider, providerName, kind, run, config, parsed);
      if (replayKey) {
        // Not XX: a handling that outlived its mark (2 minutes) is still remembered as handled.
        await this.redis.redis.set(replayKey, HANDLED, 'PX', REPLAY_MEMORY_MS).catch((error: unknown) => {
          this.logger.warn({ err: error, provider: providerName, run_id: run.id }, 'a delivery handled is remembered 2 minutes only');
        });
      }
      return answer;
    } catch (error) {
      // Not handled: the carrier's retry of this very request must get through. The error answered is the handling's:
      // with Redis gone since the check, the delivery stays marked as being handled: its retry is answered 503 until
      // the mark lapses (2 minutes), then taken.
      if (replayKey) {
        await this.redis.redis.del(replayKey).catch((forgetError: unknown) => {
          this.logger.warn({ err: forgetError, provider: providerName, run_id: run.id }, "could not forget a delivery that failed; the carrier's retry of it is refused");
        });
      }
      throw error;
    }
  }

  /** The one refusal of a request that is signed but not verified for its run, whatever the reason, which is logged. */
  private unverifiable(providerName: string, runId: string, reason: string): DomainError {
    this.logger.warn({ provider: providerName, run_id: runId.slice(0, 40), reason }, 'refused a webhook not validly signed for its run');
    return new DomainError(403, 'webhook_signature_invalid', 'The request is not validly signed for this URL');
  }

  /**
   * Every carrier names each delivery (`replayKey`): Twilio and Plivo by their
   * signature, which signs no time; Telnyx by its signature and Vonage by its
   * JWT's `jti`, whose signed time still lets an exact copy through for 5
   * minutes. The second arrival of one is a replay, refused before anything
   * changes. Remembered per configuration (`scope`), whose credentials signed
   * it: a name one organization can choose (a JWT's `jti`, a nonce) cannot
   * block another's deliveries. Answers the key, to forget it when handling fails.
   *
   * A copy that arrives while the first is still being handled (a carrier
   * that retried a request it gave up waiting for) is not a replay yet: the
   * first may still fail, and be forgotten for its retry. It is answered 503
   * `webhook_in_progress`, which carriers retry, rather than 403, which they
   * do not.
   */
  private async rememberDelivery(provider: object, request: WebhookRequest, scope: number): Promise<string | null> {
    const replayKey = (provider as { replayKey?: (request: WebhookRequest) => string | null }).replayKey?.(request);
    if (!replayKey) return null;
    const key = this.redis.keyFor('webhook-seen', scope, replayKey);
    const fresh = await this.redis.redis.set(key, HANDLING, 'PX', HANDLING_MEMORY_MS, 'NX');
    if (fresh === 'OK') return key;
    // Marked handled, or by an older gateway ('1'): a replay. Being handled, or gone since (a failed first, forgotten
    // for this very retry): to be tried again.
    const seen = await this.redis.redis.get(key);
    if (seen !== HANDLING && seen !== null) throw new DomainError(403, 'webhook_signature_invalid', 'This request was already delivered: a replay');
    throw new DomainError(503, 'webhook_in_progress', 'This request is being handled; send it again shortly');
  }

  private async accept(
    provider: CarrierWebhooks,
    providerName: string,
    kind: WebhookKind,
    run: WorkflowRun,
    config: TelephonyConfiguration | null,
    parsed: ParsedWebhook,
  ): Promise<AnswerInstructions | null> {
    const providerCallId = parsed.providerCallId ?? run.providerCallId ?? '';
    for (const event of parsed.events) {
      const job = { ...event, runId: run.id, organizationId: run.organizationId, provider: providerName, providerCallId };
      // A second event of one type that carries news (machine verdict, price, recording) must not collapse into the first.
      const extras = [event.answeredBy && 'amd', event.cost && 'cost', event.recordingUrl && 'rec'].filter(Boolean).join('-');
      await this.events.enqueueEvent(job, 0, extras ? `${callEventJobId(job)}-${extras}` : callEventJobId(job));
    }
    if (kind !== 'answer') return null;
    const answered = parsed.events.find((event) => event.type === 'answered');
    // A machine the configuration hangs up on (as the carrier reads it: detection on, no `machine_action` is a hang-up)
    // gets no agent: do not wait for one to report.
    const hangsUpOnMachine = answered?.answeredBy === 'machine' && hangsUpOnMachines(config?.settings ?? {});
    // Decided on the row itself, so a cancel or the reaper that ended the run since it was read wins.
    const live = !isFinalRunStatus(run.status) && (hangsUpOnMachine || (await this.runs.markAgentSessionStarted(run.id)));
    if (!live) {
      // Canceled, or given up by the reaper, before the callee picked up: no agent for a call whose record is closed.
      await this.runs.appendEvent(run.id, 'api.answered_after_end', { status: run.status });
      return provider.answerInstructions({ runId: run.id, streamUrl: '', sessionToken: '', settings: config?.settings ?? {}, endCall: true });
    }

    const stream = agentStreamFor(this.sessions, run.id, {
      defaultUrl: this.config.agentRuntimeUrl,
      settings: config?.settings ?? {},
      lifetime: {
        minimumSeconds: this.config.agentSessionTtlSeconds,
        maxCallDurationSeconds: run.maxCallDurationSeconds ?? config?.maxCallDurationSeconds ?? null,
        uploadTimeoutMs: this.config.httpRequestTimeoutMs,
      },
    });
    return provider.answerInstructions({
      runId: run.id,
      streamUrl: stream.url,
      sessionToken: stream.sessionToken,
      settings: config?.settings ?? {},
      answeredBy: answered?.answeredBy,
    });
  }
}

/**
 * Refuses with 401 a request without the carrier's signature headers, before
 * any run is read, so the answer is the same for every run id. Each carrier's
 * `verifyWebhook` decides "unsigned" on the headers alone, before it reads
 * credentials: asked without any, it throws a 401 for that and nothing else.
 * Whatever else it finds is for the check with the run's credentials.
 */
function assertSigned(provider: CarrierWebhooks, request: WebhookRequest): void {
  try {
    provider.verifyWebhook(request, null, Date.now());
  } catch (error) {
    if (error instanceof WebhookRejected && error.status === 401) throw unsigned(error);
  }
}

function parseOrRefuse(provider: CarrierWebhooks, kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
  try {
    return provider.parseWebhook(kind, request);
  } catch (error) {
    throw Errors.validation(`The carrier's request could not be read: ${(error as Error).message}`);
  }
}

function unsigned(error: WebhookRejected): DomainError {
  return new DomainError(401, 'webhook_unsigned', error.message);
}

