import { DownloadTokens } from '@app/artifacts';
import { AppConfig } from '@app/config';
import { WorkflowRun } from '@app/persistence';
import { RunPresenter } from './run-presenter.service';

const START = Date.parse('2026-11-22T10:00:10.500Z');

function completedRun(id: number): WorkflowRun {
  return {
    id,
    workflowId: 1,
    name: `WR-API-${id}`,
    provider: 'sandbox',
    createdAt: new Date(START),
    updatedAt: new Date(START),
    isCompleted: true,
    transcriptKey: `runs/0/${id}-transcript.json`,
    recordingKey: `runs/0/${id}-recording.wav`,
    durationSeconds: 0,
    costInfo: {},
    answeredAt: null,
    endedAt: null,
  } as unknown as WorkflowRun;
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
    const first = runs.present(completedRun(42));
    jest.advanceTimersByTime(20_000);
    const again = runs.present(completedRun(42));
    expect(again.transcript_url).toBe(first.transcript_url);
    expect(again.recording_url).toBe(first.recording_url);
    expect(sign).toHaveBeenCalledTimes(2);
  });

  it('gives a run-record link at least the configured lifetime and at most one step more', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const nowSeconds = Math.floor(START / 1000);
    const expiresAt = expiryOf(tokens, runs.present(completedRun(42)).transcript_url!);
    expect(expiresAt).toBeGreaterThanOrEqual(nowSeconds + 3600);
    expect(expiresAt).toBeLessThan(nowSeconds + 3600 + 60);
    expect(expiresAt % 60).toBe(0);
  });

  it('moves to a new link once the step has passed', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const first = runs.present(completedRun(42)).transcript_url!;
    jest.advanceTimersByTime(60_000);
    const later = runs.present(completedRun(42)).transcript_url!;
    expect(later).not.toBe(first);
    expect(expiryOf(tokens, later) - expiryOf(tokens, first)).toBe(60);
  });

  it('keeps the step within a sixtieth of a short lifetime', () => {
    const { presenter: runs, tokens } = presenter(60);
    const nowSeconds = Math.floor(START / 1000);
    const expiresAt = expiryOf(tokens, runs.present(completedRun(42)).recording_url!);
    expect(expiresAt).toBe(nowSeconds + 60);
  });

  it('keeps links of different runs and artifacts apart', () => {
    const { presenter: runs, tokens } = presenter(3600);
    const one = runs.present(completedRun(1));
    const two = runs.present(completedRun(2));
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
