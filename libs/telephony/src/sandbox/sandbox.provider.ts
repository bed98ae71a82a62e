import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, In } from 'typeorm';
import { Batcher } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { SandboxCall } from '@app/persistence';
import { CallEventJob } from '@app/queue';
import { CALL_EVENT_SINK } from '../call-event-sink.token';
import { callbackUrlsFor } from '../callback-urls';
import { CarrierError } from '../carrier-error';
import {
  AnswerContext,
  AnswerInstructions,
  CarrierWebhooks,
  ParsedWebhook,
  WebhookKind,
  WebhookRejected,
  WebhookRequest,
} from '../carrier-webhooks';
import {
  CallArtifacts,
  CallArtifactsRequest,
  CallEventSink,
  CallLookup,
  CallReference,
  PlaceCallRequest,
  PlaceCallResult,
  TelephonyProvider,
} from '../telephony-provider';
import { SandboxAgent } from './sandbox-agent';
import { sandboxConversation } from './sandbox-conversation';
import { sandboxOutcomeFor } from './sandbox-outcome';
import { readSandboxSettings, sandboxSettingsProblems } from './sandbox-settings';
import {
  SANDBOX_SIGNATURE_HEADER,
  SANDBOX_SIGNATURE_TOLERANCE_MS,
  SANDBOX_TIMESTAMP_HEADER,
  SandboxSignature,
} from './sandbox-signature';
import { instantsOf, sandboxTimeline } from './sandbox-timeline';
import { renderWav } from './wav';

/** Statements that many concurrent calls make are grouped: at most this many calls in one, this many at once. */
const GROUPING = { maxBatch: 500, maxInFlight: 4 };

interface NewSandboxCall {
  callId: string;
  runId: number;
  toNumber: string;
  outcome: string;
  ringMs: number;
  talkMs: number;
}

interface StoredSandboxCall {
  callId: string;
  /** When the carrier stored the dial request (Postgres' clock): the sandbox's events are timed from it. */
  createdAt: Date;
}

/**
 * A carrier that needs no account. It accepts dial requests like a real one,
 * keeps its own call log (the `sandbox_calls` table) and reports progress as
 * status events on the same queue real carriers' webhooks feed, timed by
 * `ring_ms` and `talk_ms`. Its settings can make it throttle, fail, or lose
 * its answers, so the dialer's fault handling is exercised for real. When a
 * call is answered it fetches our answer URL with a signed request, as a real
 * carrier does, and its built-in agent then talks to the service through the
 * agent-session contract.
 */
@Injectable()
export class SandboxProvider implements TelephonyProvider, CarrierWebhooks {
  readonly name = 'sandbox';
  /** It never bills a call. */
  readonly pricesOnLookup = false;
  readonly streamsAtDial = false;
  readonly findsCallsByNumbers = false;
  private readonly signature: SandboxSignature;
  private readonly ledger = new Batcher<NewSandboxCall, StoredSandboxCall>((calls) => this.storeCalls(calls), GROUPING);
  private readonly callsById = new Batcher<string, SandboxCall | null>((callIds) => this.findCallsById(callIds), GROUPING);

  constructor(
    @Inject(CALL_EVENT_SINK) private readonly events: CallEventSink,
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.signature = new SandboxSignature(config.secretsKey);
  }

  validateCredentials(): string[] {
    return [];
  }

  /** The sandbox has no accounts: its calls are this service's own. */
  accountOf(): null {
    return null;
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return sandboxSettingsProblems(settings);
  }

  async checkCredentials(): Promise<{ ok: true }> {
    return { ok: true };
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const settings = readSandboxSettings(request.settings);
    const roll = Math.random();
    if (roll < settings.throttleRate) {
      throw new CarrierError('Sandbox carrier: 429 too many requests', {
        reason: 'carrier_throttled',
        permanent: false,
        notProcessed: true,
        throttled: true,
        carrierCode: 'SANDBOX-429',
      });
    }
    if (roll < settings.throttleRate + settings.errorRate) {
      throw new CarrierError('Sandbox carrier: 503 service unavailable, request not processed', {
        reason: 'carrier_unavailable',
        permanent: false,
        notProcessed: true,
        carrierCode: 'SANDBOX-503',
      });
    }

    const outcome = sandboxOutcomeFor(request.to);
    const talkMs = Math.min(settings.talkMs, request.maxCallDurationSeconds * 1000);
    const call = await this.storeCall(request.runId, request.to, outcome, settings.ringMs, talkMs);
    if (outcome === 'reject_dial') {
      throw new CarrierError('Sandbox carrier rejected the dial request: number not allowed', {
        reason: 'carrier_rejected',
        permanent: true,
        notProcessed: true,
        carrierCode: 'SANDBOX-0004',
      });
    }
    // Each event carries the time it happens at, not the time it was scheduled. Events of one instant (a call
    // without ring or talk time is over at once) travel in one job, in order; each instant is delayed to its time.
    // Without the built-in agent nothing happens on an answer, so they may be applied at once.
    await Promise.all(
      instantsOf(sandboxTimeline(outcome, settings.ringMs, talkMs)).map(([first, ...rest]) => {
        const at = new Date(call.createdAt.getTime() + first.atMs);
        const following = rest.map((step) => this.event(request, call.callId, step, at));
        const event = this.event(request, call.callId, first, at);
        const job = following.length ? { ...event, following, ...(settings.builtinAgent ? {} : { nothingBetween: true }) } : event;
        return this.events.publish(job, at.getTime() - Date.now());
      }),
    );
    if (roll < settings.throttleRate + settings.errorRate + settings.timeoutRate) {
      // The call exists, but its answer is lost on the way back, as with a network timeout.
      throw new Error('Sandbox carrier: the dial request timed out');
    }
    return { providerCallId: call.callId };
  }

  async lookupCall(reference: CallReference): Promise<CallLookup> {
    const call = await this.findCall(reference);
    if (!call) return { kind: 'not_found' };
    if (call.outcome === 'reject_dial') return { kind: 'not_found' };
    const elapsedMs = Date.now() - call.createdAt.getTime();
    const timeline = sandboxTimeline(call.outcome as never, call.ringMs, call.talkMs);
    const canceledAtMs = call.canceledAt ? call.canceledAt.getTime() - call.createdAt.getTime() : Infinity;
    const happened = timeline.filter((step) => step.atMs <= elapsedMs && step.atMs < canceledAtMs);
    const events = happened.map((step) =>
      this.event(reference, call.callId, step, new Date(call.createdAt.getTime() + step.atMs)),
    );
    if (call.canceledAt && canceledAtMs <= elapsedMs && happened.length < timeline.length) {
      events.push(this.event(reference, call.callId, { type: 'canceled' }, call.canceledAt));
    }
    return { kind: 'found', providerCallId: call.callId, events };
  }

  async hangup(reference: CallReference): Promise<boolean> {
    const call = await this.findCall(reference);
    if (!call || call.canceledAt) return call !== null;
    // Only a call that is still ringing can be hung up; an answered one belongs to the agent.
    const [, changed] = await this.dataSource.query(
      `UPDATE sandbox_calls SET canceled_at = now()
        WHERE call_id = $1 AND canceled_at IS NULL AND now() < created_at + ($2::double precision * interval '1 millisecond')`,
      [call.callId, call.ringMs],
    );
    if (!changed) return false;
    await this.events.publish(this.event(reference, call.callId, { type: 'canceled' }), 0);
    return true;
  }

  /**
   * A sandbox call follows its timeline, whose answered part (`talk_ms`) is
   * capped by the call's maximum duration: it cannot talk on past its limit,
   * so only a ringing one is left to end.
   */
  async endCall(reference: CallReference): Promise<boolean> {
    return this.hangup(reference);
  }

  async afterAnswer(reference: CallReference): Promise<void> {
    if (!readSandboxSettings(reference.settings).builtinAgent) return;
    const call = await this.findCall(reference);
    if (!call || call.canceledAt) return;
    const answerUrl = callbackUrlsFor(this.config.apiInternalUrl, this.name, reference.runId).answerUrl;
    const body = Buffer.from(JSON.stringify({ call_id: call.callId, answered_by: 'human' }));
    const timestamp = Date.now();
    const response = await fetch(answerUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [SANDBOX_TIMESTAMP_HEADER]: String(timestamp),
        [SANDBOX_SIGNATURE_HEADER]: this.signature.sign('POST', answerUrl, body, timestamp),
      },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`sandbox answer URL answered ${response.status}`);
    const instructions = (await response.json()) as { action?: string; session_token?: string };
    // Told to hang up (the run already ended): the call ends without an agent, as a real carrier's would.
    if (instructions.action === 'hangup') return;
    if (!instructions.session_token) throw new Error('sandbox answer URL gave no session token');
    await new SandboxAgent(this.config.apiInternalUrl).converse(instructions.session_token, call.talkMs);
  }

  verifyWebhook(request: WebhookRequest, _credentials: Record<string, unknown> | null, nowMs: number): void {
    const signature = request.headers[SANDBOX_SIGNATURE_HEADER];
    const timestamp = Number(request.headers[SANDBOX_TIMESTAMP_HEADER]);
    if (!signature || !Number.isFinite(timestamp)) throw new WebhookRejected(401, 'The request is not signed');
    if (Math.abs(nowMs - timestamp) > SANDBOX_SIGNATURE_TOLERANCE_MS) {
      throw new WebhookRejected(403, 'The signature is too old: replayed request');
    }
    if (!this.signature.matches(request.method, request.url, request.rawBody, timestamp, signature)) {
      throw new WebhookRejected(403, 'The signature does not match');
    }
  }

  /** An exact copy of a request carries its signature (over method, URL, body and time): the second is a replay. */
  replayKey(request: WebhookRequest): string | null {
    const signature = request.headers[SANDBOX_SIGNATURE_HEADER];
    return signature ? `sandbox:${signature}` : null;
  }

  parseWebhook(_kind: WebhookKind, request: WebhookRequest): ParsedWebhook {
    const body = JSON.parse(request.rawBody.toString('utf8') || '{}') as { call_id?: unknown };
    return { providerCallId: typeof body.call_id === 'string' ? body.call_id : null, events: [] };
  }

  answerInstructions(context: AnswerContext): AnswerInstructions {
    const body = context.endCall
      ? { action: 'hangup' }
      : { action: 'stream', stream_url: context.streamUrl, session_token: context.sessionToken };
    return { contentType: 'application/json', body: JSON.stringify(body) };
  }

  async fetchRecording(): Promise<{ contentType: string; body: Buffer }> {
    throw new Error('The sandbox carrier keeps no recordings; its agent uploads one');
  }

  async collectArtifacts(request: CallArtifactsRequest): Promise<CallArtifacts> {
    const transcript = sandboxConversation(request.agentOpening, request.durationSeconds * 1000);
    if (!request.withRecording) return { transcript, recording: null };
    const recording = renderWav(
      request.durationSeconds * 1000,
      transcript.map((turn) => ({
        startMs: turn.start_ms,
        endMs: turn.end_ms,
        frequencyHz: turn.speaker === 'agent' ? 440 : 330,
      })),
    );
    return { transcript, recording: { contentType: 'audio/wav', body: recording } };
  }

  /** The carrier's ledger entry for a dial request. */
  private storeCall(runId: number, toNumber: string, outcome: string, ringMs: number, talkMs: number): Promise<StoredSandboxCall> {
    return this.ledger.submit({ callId: `SB-${randomUUID()}`, runId, toNumber, outcome, ringMs, talkMs });
  }

  /** Dial requests that arrive together are stored in one multi-row INSERT (raw SQL, no transaction around it). */
  private async storeCalls(calls: NewSandboxCall[]): Promise<StoredSandboxCall[]> {
    const rows: Array<{ call_id: string; created_at: Date }> = await this.dataSource.query(
      `INSERT INTO sandbox_calls (call_id, run_id, to_number, outcome, ring_ms, talk_ms)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::integer[], $6::integer[])
       RETURNING call_id, created_at`,
      [
        calls.map((call) => call.callId),
        calls.map((call) => call.runId),
        calls.map((call) => call.toNumber),
        calls.map((call) => call.outcome),
        calls.map((call) => call.ringMs),
        calls.map((call) => call.talkMs),
      ],
    );
    const createdAt = new Map(rows.map((row) => [row.call_id, new Date(row.created_at)]));
    return calls.map((call) => ({ callId: call.callId, createdAt: createdAt.get(call.callId) ?? new Date() }));
  }

  private async findCall(reference: CallReference): Promise<SandboxCall | null> {
    if (reference.providerCallId) return this.callsById.submit(reference.providerCallId);
    return this.dataSource.getRepository(SandboxCall).findOne({ where: { runId: reference.runId }, order: { createdAt: 'DESC' } });
  }

  /** Look-ups by call id (one for every answered call when the built-in agent talks) that arrive together, in one query. */
  private async findCallsById(callIds: string[]): Promise<Array<SandboxCall | null>> {
    const calls = await this.dataSource.getRepository(SandboxCall).findBy({ callId: In([...new Set(callIds)]) });
    const byId = new Map(calls.map((call) => [call.callId, call]));
    return callIds.map((callId) => byId.get(callId) ?? null);
  }

  private event(
    call: { runId: number; organizationId: number },
    callId: string,
    step: { type: CallEventJob['type']; durationSeconds?: number; reason?: string },
    occurredAt?: Date,
  ): CallEventJob {
    return {
      runId: call.runId,
      organizationId: call.organizationId,
      provider: this.name,
      providerCallId: callId,
      type: step.type,
      occurredAt: (occurredAt ?? new Date()).toISOString(),
      ...(step.durationSeconds !== undefined ? { durationSeconds: step.durationSeconds } : {}),
      ...(step.reason ? { reason: step.reason } : {}),
    };
  }
}
