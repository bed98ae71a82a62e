import { DownloadTokens } from '@app/artifacts';
import { AppConfig } from '@app/config';
import { RunPresenter } from './run-presenter.service';
import { RunRecordRow } from './run-records.service';

const START = Date.parse('2026-11-22T10:00:10.500Z');

function completedRun(id: number): RunRecordRow {
  return {
    id,
    organization_id: 1,
    workflow_id: 1,
    name: `WR-API-${id}`,
    provider: 'sandbox',
    created_at: new Date(START).toISOString(),
    updated_at: new Date(START).toISOString(),
    is_completed: true,
    has_transcript: true,
    has_recording: true,
    duration_seconds: 0,
    cost_info: {},
    definition_id: 1,
    call_type: 'outbound',
    initial_context: '{}',
    gathered_context: '{}',
    logs: '{}',
    annotations: '{}',
    status: 'completed',
    environment: 'production',
    phone_number: '+14155552671',
    from_number: '+14155550100',
    telephony_configuration_id: 1,
    provider_call_id: `SB-${id}`,
    answered_at: null,
    ended_at: null,
    end_reason: null,
    trigger_uuid: null,
  };
}

/** The record as a client reads it. */
function record(runs: RunPresenter, run: RunRecordRow): { transcript_url: string | null; recording_url: string | null } {
  return JSON.parse(runs.recordJson(run));
}

function presenter(ttlSeconds: number): { presenter: RunPresenter; tokens: DownloadTokens } {
  const tokens = new DownloadTokens(Buffer.alloc(32, 7));
  const config = { downloadUrlTtlSeconds: ttlSeconds, publicBaseUrl: 'https://calls.example.com' } as AppConfig;
  return { presenter: new RunPresenter(tokens, config), tokens };
}

/** The expiry a run-record link carries, read back through its own token. */
function expiryOf(tokens: DownloadTokens, url: string): number {
  const [payload, signature] = url.split('/').slice(-2);
  const check = tokens.verify(`${payload}.${signature}`, 0);
  if (!check.ok) throw new Error(`link does not verify: ${check.reason}`);
  return check.grant.expiresAt;
}

describe('RunPresenter download links', () => {
  beforeEach(() => jest.useFakeTimers({ now: START }));
  afterEach(() => jest.useRealTimers());

  it('answers the same run-record links, signed once, to reads within one expiry step', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const sign = jest.spyOn(tokens, 'sign');
    const first = record(runs, completedRun(42));
    jest.advanceTimersByTime(20_000);
    const again = record(runs, completedRun(42));
    expect(again.transcript_url).toBe(first.transcript_url);
    expect(again.recording_url).toBe(first.recording_url);
    expect(sign).toHaveBeenCalledTimes(2);
  });

  it('gives a run-record link at least the configured lifetime and at most one step more', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const nowSeconds = Math.floor(START / 1000);
    const expiresAt = expiryOf(tokens, record(runs, completedRun(42)).transcript_url!);
    expect(expiresAt).toBeGreaterThanOrEqual(nowSeconds + 3600);
    expect(expiresAt).toBeLessThan(nowSeconds + 3600 + 60);
    expect(expiresAt % 60).toBe(0);
  });

  it('moves to a new link once the step has passed', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const first = record(runs, completedRun(42)).transcript_url!;
    jest.advanceTimersByTime(60_000);
    const later = record(runs, completedRun(42)).transcript_url!;
    expect(later).not.toBe(first);
    expect(expiryOf(tokens, later) - expiryOf(tokens, first)).toBe(60);
  });

  it('keeps the step within a sixtieth of a short lifetime', () => {
    const { presenter: runs, tokens } = presenter(60);
    const nowSeconds = Math.floor(START / 1000);
    const expiresAt = expiryOf(tokens, record(runs, completedRun(42)).recording_url!);
    expect(expiresAt).toBe(nowSeconds + 60);
  });

  it('keeps links of different runs and artifacts apart', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const one = record(runs, completedRun(1));
    const two = record(runs, completedRun(2));
    expect(new Set([one.transcript_url, one.recording_url, two.transcript_url, two.recording_url]).size).toBe(4);
    const [payload, signature] = two.recording_url!.split('/').slice(-2);
    expect(tokens.verify(`${payload}.${signature}`)).toMatchObject({ ok: true, grant: { runId: 2, artifact: 'recording' } });
  });

  it('mints a link on request with exactly the lifetime asked, not reused', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const nowSeconds = Math.floor(START / 1000);
    const minted = runs.downloadUrl(42, 'transcript', 90);
    expect(expiryOf(tokens, minted.url)).toBe(nowSeconds + 90);
    expect(minted.expires_at).toBe(new Date((nowSeconds + 90) * 1000).toISOString());
  });
});
