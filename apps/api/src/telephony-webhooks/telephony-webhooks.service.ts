import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { isFinalRunStatus, TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { callEventJobId, CallEventsQueue, RedisClient } from '@app/queue';
import {
  AgentSessionTokens,
  agentStreamFor,
  AnswerInstructions,
  CarrierWebhooks,
  CredentialsCipher,
  hasWebhooks,
  TelephonyProviders,
  WebhookKind,
  WebhookRejected,
  WebhookRequest,
} from '@app/telephony';

/** How long a delivered webhook is remembered, so an exact replay of it is refused. */
const REPLAY_MEMORY_MS = 24 * 60 * 60 * 1000;

/**
 * Receives a carrier's callbacks for one run. The signature is verified
 * before anything else; the events are handed to the dialer through the
 * call-events queue and applied there by the same state machine as every
 * other carrier's. The answer callback is told to stream the call's audio
 * to the agent runtime, with a session token for this run.
 */
@Injectable()
export class TelephonyWebhooksService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly events: CallEventsQueue,
    private readonly sessions: AgentSessionTokens,
    private readonly runs: WorkflowRunStore,
    private readonly redis: RedisClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async receive(providerName: string, kind: WebhookKind, runId: number, request: WebhookRequest): Promise<AnswerInstructions | null> {
    const provider = this.providers.has(providerName) ? this.providers.get(providerName) : null;
    if (!provider || !hasWebhooks(provider)) throw Errors.notFound('provider_not_found', `No carrier named "${providerName}" takes webhooks`);
    const run = await this.dataSource.getRepository(WorkflowRun).findOneBy({ id: runId });
    if (!run || run.provider !== providerName) throw Errors.notFound('run_not_found', 'No call of this carrier has this run id');
    const config = run.telephonyConfigurationId
      ? await this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: run.telephonyConfigurationId })
      : null;
    const credentials = this.cipher.credentialsOf(config);
    try {
      provider.verifyWebhook(request, credentials, Date.now());
    } catch (error) {
      if (error instanceof WebhookRejected) {
        throw new DomainError(error.status, error.status === 401 ? 'webhook_unsigned' : 'webhook_signature_invalid', error.message);
      }
      throw error;
    }
    const replayKey = await this.rememberDelivery(provider, request);
    try {
      return await this.accept(provider, providerName, kind, run, config, request);
    } catch (error) {
      // Not handled: the carrier's retry of this very request must get through.
      if (replayKey) await this.redis.redis.del(replayKey);
      throw error;
    }
  }

  /**
   * Every carrier names each delivery (`replayKey`): Twilio and Plivo by their
   * signature, which signs no time; Telnyx by its signature and Vonage by its
   * JWT's `jti`, whose signed time still lets an exact copy through for 5
   * minutes. The second arrival of one is a replay, refused before anything
   * changes. Answers the key, to forget it when handling fails.
   */
  private async rememberDelivery(provider: object, request: WebhookRequest): Promise<string | null> {
    const replayKey = (provider as { replayKey?: (request: WebhookRequest) => string | null }).replayKey?.(request);
    if (!replayKey) return null;
    const key = this.redis.keyFor('webhook-seen', replayKey);
    const fresh = await this.redis.redis.set(key, '1', 'PX', REPLAY_MEMORY_MS, 'NX');
    if (fresh !== 'OK') throw new DomainError(403, 'webhook_signature_invalid', 'This request was already delivered: a replay');
    return key;
  }

  private async accept(
    provider: CarrierWebhooks,
    providerName: string,
    kind: WebhookKind,
    run: WorkflowRun,
    config: TelephonyConfiguration | null,
    request: WebhookRequest,
  ): Promise<AnswerInstructions | null> {
    let parsed;
    try {
      parsed = provider.parseWebhook(kind, request);
    } catch (error) {
      throw Errors.validation(`The carrier's request could not be read: ${(error as Error).message}`);
    }
    const providerCallId = parsed.providerCallId ?? run.providerCallId ?? '';
    for (const event of parsed.events) {
      const job = { ...event, runId: run.id, organizationId: run.organizationId, provider: providerName, providerCallId };
      // A second event of one type that carries news (machine verdict, price, recording) must not collapse into the first.
      const extras = [event.answeredBy && 'amd', event.cost && 'cost', event.recordingUrl && 'rec'].filter(Boolean).join('-');
      await this.events.enqueueEvent(job, 0, extras ? `${callEventJobId(job)}-${extras}` : callEventJobId(job));
    }
    if (kind !== 'answer') return null;
    const answered = parsed.events.find((event) => event.type === 'answered');
    // A machine the configuration hangs up on gets no agent: do not wait for one to report.
    const hangsUpOnMachine = answered?.answeredBy === 'machine' && config?.settings.machine_action === 'hangup';
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
      ttlSeconds: this.config.agentSessionTtlSeconds,
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
