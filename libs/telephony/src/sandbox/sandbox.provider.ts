import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CallEventJob } from '@app/queue';
import { CALL_EVENT_SINK } from '../call-event-sink.token';
import { CarrierError } from '../carrier-error';
import {
  CallArtifacts,
  CallArtifactsRequest,
  CallEventSink,
  PlaceCallRequest,
  PlaceCallResult,
  TelephonyProvider,
  TranscriptTurn,
} from '../telephony-provider';
import { readSandboxSettings, sandboxSettingsProblems } from './sandbox-settings';
import { sandboxOutcomeFor } from './sandbox-outcome';
import { renderWav } from './wav';

/**
 * A carrier that needs no account. It accepts dial requests like a real one
 * and reports the call's progress as status events on the same queue real
 * carriers' webhooks feed, timed by `ring_ms` and `talk_ms`. Because the
 * events are delayed jobs in Redis, a call in progress survives a dialer restart.
 */
@Injectable()
export class SandboxProvider implements TelephonyProvider {
  readonly name = 'sandbox';

  constructor(@Inject(CALL_EVENT_SINK) private readonly events: CallEventSink) {}

  validateCredentials(): string[] {
    return [];
  }

  validateSettings(settings: Record<string, unknown>): string[] {
    return sandboxSettingsProblems(settings);
  }

  async placeCall(request: PlaceCallRequest): Promise<PlaceCallResult> {
    const outcome = sandboxOutcomeFor(request.to);
    if (outcome === 'reject_dial') {
      throw new CarrierError('Sandbox carrier rejected the dial request', 'carrier_rejected', true, true, 'SANDBOX-0004');
    }
    const { ringMs, talkMs } = readSandboxSettings(request.settings);
    const providerCallId = `SB-${randomUUID()}`;
    const talkSeconds = Math.min(talkMs / 1000, request.maxCallDurationSeconds);
    const event = (type: CallEventJob['type'], extra: Partial<CallEventJob> = {}): CallEventJob => ({
      runId: request.runId,
      organizationId: request.organizationId,
      provider: this.name,
      providerCallId,
      type,
      occurredAt: new Date().toISOString(),
      ...extra,
    });
    await this.events.publish(event('ringing'), 0);
    switch (outcome) {
      case 'busy':
        await this.events.publish(event('busy'), ringMs);
        break;
      case 'no_answer':
        await this.events.publish(event('no_answer'), ringMs);
        break;
      case 'carrier_failure':
        await this.events.publish(event('failed', { reason: 'carrier_failure' }), ringMs);
        break;
      default:
        await this.events.publish(event('answered'), ringMs);
        await this.events.publish(event('completed', { durationSeconds: talkSeconds }), ringMs + talkSeconds * 1000);
    }
    return { providerCallId };
  }

  async collectArtifacts(request: CallArtifactsRequest): Promise<CallArtifacts> {
    const transcript = sandboxConversation(request.agentOpening, request.durationSeconds * 1000);
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
}

/** The built-in agent opens with its greeting; the simulated callee answers and says goodbye. */
function sandboxConversation(agentOpening: string, durationMs: number): TranscriptTurn[] {
  const lines: Array<[TranscriptTurn['speaker'], string]> = [
    ['agent', agentOpening],
    ['user', 'Hello, yes, speaking.'],
    ['agent', 'Thank you for your time. Goodbye!'],
    ['user', 'Goodbye.'],
  ];
  const slot = durationMs / lines.length;
  return lines.map(([speaker, text], index) => ({
    speaker,
    text,
    start_ms: Math.round(index * slot),
    end_ms: Math.round(index * slot + slot * 0.8),
  }));
}
