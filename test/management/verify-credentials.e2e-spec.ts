import { TwilioFake } from '../fakes/twilio-fake';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';

describe('POST /api/v1/telephony-configurations/{id}/verify', () => {
  const twilio = new TwilioFake();
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    const baseUrl = await twilio.start();
    apps = await startTestApps({ dialer: false, env: { TWILIO_API_URL: baseUrl } });
    org = await createOrganization(apps.dataSource);
  });
  afterAll(async () => {
    await apps.close();
    await twilio.stop();
  });

  const create = async (credentials: Record<string, unknown>) =>
    (
      await apps.client.post(
        '/api/v1/telephony-configurations',
        { name: 'Twilio', provider: 'twilio', credentials, from_numbers: ['+15005550006'] },
        { key: org.adminKey },
      )
    ).body.id as number;
  const verify = (id: number, key = org.adminKey) => apps.client.post(`/api/v1/telephony-configurations/${id}/verify`, undefined, { key });

  it('answers ok when the carrier accepts the stored credentials', async () => {
    const response = await verify(await create(twilio.credentials));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true });
    expect(twilio.requests.some((request) => request.method === 'GET' && request.path.endsWith(`${twilio.credentials.account_sid}.json`))).toBe(true);
  });

  it('answers ok false with the reason when the carrier refuses them', async () => {
    const id = await create({ ...twilio.credentials, auth_token: 'f'.repeat(32) });
    const response = await verify(id);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ ok: false, reason: 'unauthorized' });
  });

  it('answers 404 for a configuration of another organization', async () => {
    const id = await create(twilio.credentials);
    const other = await createOrganization(apps.dataSource);
    expect((await verify(id, other.adminKey)).status).toBe(404);
  });

  it('answers ok for the sandbox, which needs no account', async () => {
    const created = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+15005550006'] },
      { key: org.adminKey },
    );
    expect((await verify(created.body.id)).body).toEqual({ ok: true });
  });

  it('answers 503 credentials_unreadable, not carrier_unreachable, when this server cannot decrypt the stored credentials, and asks no carrier', async () => {
    const id = await create(twilio.credentials);
    // Sealed under another SECRETS_KEY, as after a key change that missed this row.
    await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' WHERE id = $1`, [id]);
    const asked = twilio.requests.length;
    const response = await verify(id);
    expect(response.status).toBe(503);
    expect(response.body.code).toBe('credentials_unreadable');
    expect(twilio.requests.length).toBe(asked);
  });
});
