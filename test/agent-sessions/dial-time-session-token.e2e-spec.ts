import { AgentSessionTokens } from '@app/telephony';
import { FROM, useCarrierHarness } from '../carriers/carrier-harness';
import { TelnyxFake } from '../fakes/telnyx-fake';

/**
 * Telnyx Call Control has no answer URL: its dial carries the agent stream,
 * so the dialer mints the session token before the call has even rung.
 */
describe('the session token a dial carries (Telnyx)', () => {
  const fake = new TelnyxFake();
  const carrier = useCarrierHarness({
    fake,
    provider: 'telnyx',
    name: 'Telnyx session lifetime',
    apiUrlEnv: 'TELNYX_API_URL',
    findCall: (runId) => fake.callForRun(runId),
    env: { DIAL_TIMEOUT_SECONDS: '120', RING_TIMEOUT_SECONDS: '180' },
  });

  it("outlives the ring, the run's whole call and what the runtime sends after it, however long the call may last", async () => {
    const { apps, org } = carrier;
    const created = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: 'Telnyx, four-hour calls', provider: 'telnyx', credentials: fake.credentials, from_numbers: [FROM], max_call_duration_seconds: 14_400 },
      { key: org.adminKey },
    );
    expect(created.status).toBe(201);
    const runId = await carrier.trigger(created.body.id);
    await carrier.callFor(runId);
    const [dial] = fake.dialRequests().filter((request) => (request.body as { webhook_url?: string }).webhook_url?.endsWith(`/status/${runId}`));
    const token = new URL((dial.body as { stream_url: string }).stream_url).searchParams.get('session_token')!;

    // Dialed, rung for as long as the ring timeout allows, talked 4 hours: the last report and recording upload,
    // 15 minutes after the hang-up, still come with a live token.
    const afterTheCall = Math.floor(Date.now() / 1000) + 120 + 180 + 14_400 + 15 * 60;
    expect(new AgentSessionTokens(apps.config.secretsKey).verify(token, afterTheCall)).toMatchObject({ ok: true, grant: { runId } });
  });
});
