import { TelephonyConfiguration } from '@app/persistence';
import { CredentialsCipher } from '@app/telephony';
import { PlivoFake } from '../fakes/plivo-fake';
import { TelnyxFake } from '../fakes/telnyx-fake';
import { TwilioFake } from '../fakes/twilio-fake';
import { VonageFake } from '../fakes/vonage-fake';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { createPublishedWorkflow, createSandboxConfiguration, expectError, issueKey } from './management-helpers';

const PATH = '/api/v1/telephony-configurations';
const SECRET = { account_sid: 'AC-very-secret-sid', auth_token: 'tok-very-secret-token' };

describe('management API: telephony configurations', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let other: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource);
    other = await createOrganization(apps.dataSource, 'Other org');
  });
  afterAll(() => apps.close());

  const rowOf = (id: number) => apps.dataSource.getRepository(TelephonyConfiguration).findOneByOrFail({ id });
  const defaultsOf = async (organizationId: number) =>
    (await apps.dataSource.getRepository(TelephonyConfiguration).findBy({ organizationId, isDefaultOutbound: true })).map((row) => row.id);

  it('creates a configuration with defaults and normalised numbers; the first one becomes the default', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const response = await apps.client.post(
      PATH,
      { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+1 (500) 555-0006', '+15005550006', '+44 20 7946 0958'] },
      { key: fresh.adminKey },
    );
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.any(Number),
      name: 'Sandbox',
      provider: 'sandbox',
      has_credentials: false,
      from_numbers: ['+15005550006', '+442079460958'],
      is_default_outbound: true,
      calls_per_second: 1,
      max_concurrent_calls: 10,
      max_call_duration_seconds: 3600,
      settings: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await defaultsOf(fresh.organizationId)).toEqual([response.body.id]);
  });

  it('does not make the first configuration the default when is_default_outbound is false', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const created = await createSandboxConfiguration(apps, fresh, { is_default_outbound: false });
    expect(created.is_default_outbound).toBe(false);
    expect(await defaultsOf(fresh.organizationId)).toEqual([]);
  });

  it('does not make a second configuration the default unless asked', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await createSandboxConfiguration(apps, fresh);
    const second = await createSandboxConfiguration(apps, fresh, { name: 'Second' });
    expect(second.is_default_outbound).toBe(false);
    expect(await defaultsOf(fresh.organizationId)).toEqual([first.id]);
  });

  it('switches the default when a configuration is created with is_default_outbound true', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await createSandboxConfiguration(apps, fresh);
    const second = await createSandboxConfiguration(apps, fresh, { name: 'Second', is_default_outbound: true });
    expect(second.is_default_outbound).toBe(true);
    expect(await defaultsOf(fresh.organizationId)).toEqual([second.id]);
    const firstNow = await apps.client.get(`${PATH}/${first.id}`, { key: fresh.adminKey });
    expect(firstNow.body.is_default_outbound).toBe(false);
  });

  it('switches the default when a configuration is patched with is_default_outbound true', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await createSandboxConfiguration(apps, fresh);
    const second = await createSandboxConfiguration(apps, fresh, { name: 'Second' });
    const response = await apps.client.patch(`${PATH}/${second.id}`, { is_default_outbound: true }, { key: fresh.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.is_default_outbound).toBe(true);
    expect(await defaultsOf(fresh.organizationId)).toEqual([second.id]);
    expect((await rowOf(first.id)).isDefaultOutbound).toBe(false);
  });

  it('keeps exactly one default when configurations are created concurrently in an empty organization', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        apps.client.post(PATH, { name: `c${i}`, provider: 'sandbox', from_numbers: ['+15005550006'], ...(i % 2 ? { is_default_outbound: true } : {}) }, { key: fresh.adminKey }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(await defaultsOf(fresh.organizationId)).toHaveLength(1);
  });

  it('never returns credentials, stores them encrypted, and tells whether there are some', async () => {
    const created = await apps.client.post(
      PATH,
      { name: 'With secrets', provider: 'sandbox', from_numbers: ['+15005550006'], credentials: SECRET },
      { key: org.adminKey },
    );
    expect(created.status).toBe(201);
    expect(created.body.has_credentials).toBe(true);
    const responses = [
      created,
      await apps.client.get(`${PATH}/${created.body.id}`, { key: org.adminKey }),
      await apps.client.get(PATH, { key: org.adminKey }),
      await apps.client.patch(`${PATH}/${created.body.id}`, { name: 'Renamed' }, { key: org.adminKey }),
      await apps.client.patch(`${PATH}/${created.body.id}`, { credentials: SECRET }, { key: org.adminKey }),
    ];
    const row = await rowOf(created.body.id);
    for (const response of responses) {
      expect(response.status).toBeLessThan(300);
      expect(response.text).not.toContain(SECRET.account_sid);
      expect(response.text).not.toContain(SECRET.auth_token);
      expect(response.text).not.toMatch(/"credentials(_encrypted)?"/);
      expect(response.text).not.toContain((row.credentialsEncrypted as string).split('.')[3]);
    }
    expect(row.credentialsEncrypted).not.toContain(SECRET.auth_token);
    expect(apps.api.get(CredentialsCipher).decrypt(row.credentialsEncrypted as string)).toEqual(SECRET);
  });

  it('removes credentials when patched with credentials null', async () => {
    const created = await createSandboxConfiguration(apps, org, { credentials: SECRET, is_default_outbound: false });
    const response = await apps.client.patch(`${PATH}/${created.id}`, { credentials: null }, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.has_credentials).toBe(false);
    expect((await rowOf(created.id)).credentialsEncrypted).toBeNull();
  });

  it('patches only the fields given', async () => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false, calls_per_second: 5 });
    const response = await apps.client.patch(
      `${PATH}/${created.id}`,
      { name: 'Renamed', max_concurrent_calls: 50, from_numbers: ['+1 415 555 2671'], settings: { ring_ms: 10 } },
      { key: org.adminKey },
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ...created,
      name: 'Renamed',
      max_concurrent_calls: 50,
      from_numbers: ['+14155552671'],
      settings: { ring_ms: 10 },
      updated_at: expect.any(String),
    });
    expect(response.body.calls_per_second).toBe(5);
    expect(new Date(response.body.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(created.updated_at).getTime());
    expect((await apps.client.get(`${PATH}/${created.id}`, { key: org.adminKey })).body).toEqual(response.body);
  });

  it('answers one configuration and lists the organization’s configurations newest first', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await createSandboxConfiguration(apps, fresh);
    const second = await createSandboxConfiguration(apps, fresh, { name: 'Second' });
    await createSandboxConfiguration(apps, other);
    expect((await apps.client.get(`${PATH}/${first.id}`, { key: fresh.adminKey })).body).toEqual(first);
    const list = await apps.client.get(PATH, { key: fresh.adminKey });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ telephony_configurations: [second, first], next_cursor: null });
    // A page at a time, as the other lists.
    const head = await apps.client.get(`${PATH}?limit=1`, { key: fresh.adminKey });
    expect(head.body).toEqual({ telephony_configurations: [second], next_cursor: expect.any(String) });
    const tail = await apps.client.get(`${PATH}?limit=1&cursor=${head.body.next_cursor}`, { key: fresh.adminKey });
    expect(tail.body).toEqual({ telephony_configurations: [first], next_cursor: null });
    expectError(await apps.client.get(`${PATH}?limit=0`, { key: fresh.adminKey }), 400, 'validation_failed');
  });

  it('deletes a configuration: 204, then 404', async () => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false });
    const response = await apps.client.delete(`${PATH}/${created.id}`, { key: org.adminKey });
    expect(response.status).toBe(204);
    expectError(await apps.client.get(`${PATH}/${created.id}`, { key: org.adminKey }), 404, 'telephony_configuration_not_found');
    expectError(await apps.client.delete(`${PATH}/${created.id}`, { key: org.adminKey }), 404, 'telephony_configuration_not_found');
  });

  it('deleting the default leaves the organization without one, so triggers answer 400 telephony_not_configured', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const config = await createSandboxConfiguration(apps, fresh);
    await createSandboxConfiguration(apps, fresh, { name: 'Spare' });
    const { workflowId, triggerUuid } = await createPublishedWorkflow(apps, fresh);
    const call = () => apps.client.post(`/api/v1/public/agent/${triggerUuid}`, { phone_number: '+14155552671' }, { key: fresh.adminKey });
    const placed = await call();
    expect(placed.status).toBe(200);
    // Its run must be complete before its configuration can go (no dialer here: it waits queued until canceled).
    const runPath = `/api/v1/workflow/${workflowId}/runs/${placed.body.workflow_run_id}`;
    expect((await apps.client.post(`${runPath}/cancel`, undefined, { key: fresh.adminKey })).status).toBe(200);

    expect((await apps.client.delete(`${PATH}/${config.id}`, { key: fresh.adminKey })).status).toBe(204);
    expect(await defaultsOf(fresh.organizationId)).toEqual([]);
    expectError(await call(), 400, 'telephony_not_configured');
  });

  describe('deleting a configuration that unfinished runs use', () => {
    /** A configuration and a queued run through it (no dialer here, so the run waits until the test moves it). */
    async function configurationWithRun() {
      const fresh = await createOrganization(apps.dataSource);
      const config = await createSandboxConfiguration(apps, fresh);
      const { workflowId, triggerUuid } = await createPublishedWorkflow(apps, fresh);
      const call = async () => {
        const placed = await apps.client.post(`/api/v1/public/agent/${triggerUuid}`, { phone_number: '+14155552671' }, { key: fresh.adminKey });
        expect(placed.status).toBe(200);
        return placed.body.workflow_run_id as number;
      };
      const runId = await call();
      const remove = () => apps.client.delete(`${PATH}/${config.id}`, { key: fresh.adminKey });
      const setRun = (fields: string) => apps.dataSource.query(`UPDATE workflow_runs SET ${fields} WHERE id = $1`, [runId]);
      return { fresh, config, call, remove, setRun, runPath: `/api/v1/workflow/${workflowId}/runs/${runId}` };
    }

    it('answers 409 configuration_in_use naming how many runs, and keeps the configuration', async () => {
      const { fresh, config, call, remove } = await configurationWithRun();
      await call();

      const refused = await remove();
      expectError(refused, 409, 'configuration_in_use');
      expect(refused.body.message).toContain('2 unfinished runs');
      expect((await apps.client.get(`${PATH}/${config.id}`, { key: fresh.adminKey })).body).toEqual(config);
      expect(await defaultsOf(fresh.organizationId)).toEqual([config.id]);
    });

    it.each([
      ['dialing', `status = 'dialing', provider_call_id = 'SB-1'`],
      ['ringing', `status = 'ringing', provider_call_id = 'SB-1'`],
      ['in progress', `status = 'in_progress', provider_call_id = 'SB-1', answered_at = now()`],
      // The call is over, but its recording is still to be fetched from the carrier with the configuration's credentials.
      ['completed but still collecting its artifacts', `status = 'completed', provider_call_id = 'SB-1', ended_at = now()`],
    ])('refuses while its run is %s', async (_, fields) => {
      const { remove, setRun } = await configurationWithRun();
      await setRun(fields);
      const refused = await remove();
      expectError(refused, 409, 'configuration_in_use');
      expect(refused.body.message).toContain('1 unfinished run;');
    });

    it("refuses to change its provider while the run is unfinished, and changes it once the run is complete", async () => {
      const { fresh, config, runPath } = await configurationWithRun();
      const toTwilio = { provider: 'twilio', credentials: new TwilioFake().credentials, settings: {} };
      const refused = await apps.client.patch(`${PATH}/${config.id}`, toTwilio, { key: fresh.adminKey });
      expectError(refused, 409, 'configuration_in_use');
      expect(refused.body.message).toContain('1 unfinished run; cancel them or wait until they are complete, then change its provider');
      expect((await apps.client.get(`${PATH}/${config.id}`, { key: fresh.adminKey })).body).toEqual(config);
      // What a run does not depend on can still change, and so can the provider named as it is.
      const renamed = await apps.client.patch(`${PATH}/${config.id}`, { name: 'Renamed', provider: 'sandbox', calls_per_second: 5 }, { key: fresh.adminKey });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ name: 'Renamed', provider: 'sandbox', calls_per_second: 5 });

      expect((await apps.client.post(`${runPath}/cancel`, undefined, { key: fresh.adminKey })).status).toBe(200);
      const changed = await apps.client.patch(`${PATH}/${config.id}`, toTwilio, { key: fresh.adminKey });
      expect(changed.status).toBe(200);
      expect(changed.body.provider).toBe('twilio');
    });

    it("refuses credentials of another carrier account while the run is unfinished, takes the same account's new token", async () => {
      const fresh = await createOrganization(apps.dataSource);
      const own = new TwilioFake().credentials;
      const config = await createSandboxConfiguration(apps, fresh, { provider: 'twilio', credentials: own, settings: {} });
      const { workflowId, triggerUuid } = await createPublishedWorkflow(apps, fresh);
      const placed = await apps.client.post(`/api/v1/public/agent/${triggerUuid}`, { phone_number: '+14155552671' }, { key: fresh.adminKey });
      expect(placed.status).toBe(200);
      const patch = (body: Record<string, unknown>) => apps.client.patch(`${PATH}/${config.id}`, body, { key: fresh.adminKey });
      const storedSid = async () => apps.api.get(CredentialsCipher).credentialsOf(await rowOf(config.id))?.account_sid;
      const elsewhere = { account_sid: `AC${'b'.repeat(32)}`, auth_token: 'c'.repeat(32) };

      const refused = await patch({ credentials: elsewhere });
      expectError(refused, 409, 'configuration_in_use');
      expect(refused.body.message).toContain('1 unfinished run; cancel them or wait until they are complete, then move it to another carrier account');
      // Credentials Twilio would refuse anyway are told so first.
      expectError(await patch({ credentials: null }), 400, 'validation_failed');
      expect(await storedSid()).toBe(own.account_sid);
      // A rotated Auth Token, or an API key added, of the same account (its SID in either case): its calls' webhooks
      // and hang-ups go on working.
      const sameAccount = { ...own, account_sid: `AC${own.account_sid.slice(2).toUpperCase()}` };
      const rotated = await patch({ credentials: { ...sameAccount, auth_token: 'd'.repeat(32), api_key_sid: `SK${'e'.repeat(32)}`, api_key_secret: 'key-secret' } });
      expect(rotated.status).toBe(200);

      const runPath = `/api/v1/workflow/${workflowId}/runs/${placed.body.workflow_run_id}`;
      expect((await apps.client.post(`${runPath}/cancel`, undefined, { key: fresh.adminKey })).status).toBe(200);
      expect((await patch({ credentials: elsewhere })).status).toBe(200);
      expect(await storedSid()).toBe(elsewhere.account_sid);
    });

    it('deletes it once the run is complete: canceled, or completed with its artifacts stored', async () => {
      const canceled = await configurationWithRun();
      expect((await apps.client.post(`${canceled.runPath}/cancel`, undefined, { key: canceled.fresh.adminKey })).status).toBe(200);
      expect((await canceled.remove()).status).toBe(204);

      const completed = await configurationWithRun();
      await completed.setRun(`status = 'completed', provider_call_id = 'SB-1', ended_at = now(), is_completed = true`);
      expect((await completed.remove()).status).toBe(204);
      expectError(await apps.client.get(`${PATH}/${completed.config.id}`, { key: completed.fresh.adminKey }), 404, 'telephony_configuration_not_found');
    });
  });

  it.each([
    ['an unknown provider', { provider: 'twilio-ish' }, 'provider must be one of: sandbox'],
    ['settings the provider refuses', { settings: { ring_ms: -1 } }, 'settings.ring_ms'],
    ['settings that are not an object', { settings: [1] }, 'settings must be a JSON object'],
    ['settings that are null', { settings: null }, 'settings must be a JSON object'],
    ['a from number that is not a possible number', { from_numbers: ['+15005550006', '555-0006'] }, '"555-0006"'],
    ['from_numbers that is not an array', { from_numbers: '+15005550006' }, 'from_numbers must be an array'],
    ['a missing from_numbers', { from_numbers: undefined }, 'from_numbers'],
    ['a missing name', { name: undefined }, 'name'],
    ['calls_per_second of 0', { calls_per_second: 0 }, 'calls_per_second'],
    ['calls_per_second of 1e-300', { calls_per_second: 1e-300 }, 'calls_per_second must be at least 0.001'],
    ['calls_per_second just under 0.001', { calls_per_second: 0.000_999 }, 'calls_per_second must be at least 0.001'],
    ['calls_per_second over 10000', { calls_per_second: 10_000.5 }, 'calls_per_second'],
    ['max_concurrent_calls of 0', { max_concurrent_calls: 0 }, 'max_concurrent_calls'],
    ['a fractional max_concurrent_calls', { max_concurrent_calls: 1.5 }, 'max_concurrent_calls'],
    ['max_concurrent_calls over 10000', { max_concurrent_calls: 10_001 }, 'max_concurrent_calls'],
    ['max_call_duration_seconds under 10', { max_call_duration_seconds: 9 }, 'max_call_duration_seconds'],
    ['max_call_duration_seconds over 14400', { max_call_duration_seconds: 14_401 }, 'max_call_duration_seconds'],
    ['is_default_outbound as a string', { is_default_outbound: 'true' }, 'is_default_outbound'],
    ['credentials that are not an object', { credentials: 'secret' }, 'credentials must be a JSON object'],
    ['an unknown field', { region: 'eu' }, 'region'],
  ])('answers 400 validation_failed for %s, and stores nothing', async (_, override, problem) => {
    const fresh = await createOrganization(apps.dataSource);
    const body = { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+15005550006'], ...override };
    const response = await apps.client.post(PATH, body, { key: fresh.adminKey });
    expectError(response, 400, 'validation_failed');
    expect(response.body.message).toContain(problem);
    expect(await apps.dataSource.getRepository(TelephonyConfiguration).countBy({ organizationId: fresh.organizationId })).toBe(0);
  });

  it.each([
    ['a null name', { name: null }],
    ['a null from_numbers', { from_numbers: null }],
    ['a null calls_per_second', { calls_per_second: null }],
    ['calls_per_second under 0.001', { calls_per_second: 1e-300 }],
    ['a null is_default_outbound', { is_default_outbound: null }],
    ['settings the provider refuses', { settings: { talk_ms: 'long' } }],
    ['an unknown provider', { provider: 'nope' }],
    ['an unknown field', { credentials_encrypted: 'x' }],
  ])('answers 400 validation_failed when patching with %s, and changes nothing', async (_, body) => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false });
    expectError(await apps.client.patch(`${PATH}/${created.id}`, body, { key: org.adminKey }), 400, 'validation_failed');
    expect((await apps.client.get(`${PATH}/${created.id}`, { key: org.adminKey })).body).toEqual(created);
  });

  it('accepts calls_per_second of 0.001, one call every 1,000 seconds, the slowest pace the dialer keeps', async () => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false, calls_per_second: 0.001 });
    expect(created.calls_per_second).toBe(0.001);
    expect((await rowOf(created.id)).callsPerSecond).toBe(0.001);
  });

  /** Keys every object inherits: they must reach the carrier's checks, not vanish on the way. */
  const PROTOTYPE_KEYS = ['toString', 'constructor', 'valueOf', 'hasOwnProperty'];

  it.each(PROTOTYPE_KEYS)('answers 400 for a sandbox setting named %s, as for any unknown setting, and stores nothing', async (key) => {
    const fresh = await createOrganization(apps.dataSource);
    const body = { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+15005550006'], settings: { ring_ms: 10, [key]: 1 } };
    const response = await apps.client.post(PATH, body, { key: fresh.adminKey });
    expectError(response, 400, 'validation_failed');
    expect(response.body.message).toContain(`settings.${key} is not a sandbox setting`);
    expect(await apps.dataSource.getRepository(TelephonyConfiguration).countBy({ organizationId: fresh.organizationId })).toBe(0);
  });

  it.each(PROTOTYPE_KEYS)('answers 400 when patching with a sandbox setting named %s, and changes nothing', async (key) => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false });
    const response = await apps.client.patch(`${PATH}/${created.id}`, { settings: { [key]: 1 } }, { key: org.adminKey });
    expectError(response, 400, 'validation_failed');
    expect(response.body.message).toContain(`settings.${key} is not a sandbox setting`);
    expect((await apps.client.get(`${PATH}/${created.id}`, { key: org.adminKey })).body).toEqual(created);
  });

  it('refuses settings: null on create and on patch, as before', async () => {
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false });
    const patched = await apps.client.patch(`${PATH}/${created.id}`, { settings: null }, { key: org.adminKey });
    expectError(patched, 400, 'validation_failed');
    expect(patched.body.message).toContain('settings must be a JSON object');
    expect((await apps.client.get(`${PATH}/${created.id}`, { key: org.adminKey })).body).toEqual(created);
  });

  it('keeps sandbox credentials exactly as sent, keys named like Object.prototype members too', async () => {
    const credentials = { token: 'x', toString: 'a', constructor: 'b', nested: { valueOf: 1, constructor: 'c' } };
    const created = await createSandboxConfiguration(apps, org, { is_default_outbound: false, credentials });
    const row = await rowOf(created.id);
    expect(JSON.stringify(apps.api.get(CredentialsCipher).decrypt(row.credentialsEncrypted as string))).toBe(JSON.stringify(credentials));
  });

  describe('what each carrier checks', () => {
    const carriers = [
      { provider: 'twilio', carrier: 'Twilio', credentials: new TwilioFake().credentials },
      { provider: 'telnyx', carrier: 'Telnyx', credentials: new TelnyxFake().credentials },
      { provider: 'vonage', carrier: 'Vonage', credentials: new VonageFake().credentials },
      { provider: 'plivo', carrier: 'Plivo', credentials: new PlivoFake().credentials },
    ];
    const create = (adminKey: string, provider: string, fields: Record<string, unknown>) =>
      apps.client.post(PATH, { name: provider, provider, from_numbers: ['+15005550006'], ...fields }, { key: adminKey });
    const expectRefused = async (response: Awaited<ReturnType<typeof create>>, organizationId: number, problem: string) => {
      expectError(response, 400, 'validation_failed');
      expect(response.body.message).toContain(problem);
      expect(await apps.dataSource.getRepository(TelephonyConfiguration).countBy({ organizationId })).toBe(0);
    };

    it.each(carriers)('accepts well-formed $carrier credentials', async ({ provider, credentials }) => {
      const fresh = await createOrganization(apps.dataSource);
      expect((await create(fresh.adminKey, provider, { credentials })).status).toBe(201);
    });

    it.each(carriers.flatMap((carrier) => ['toString', 'constructor'].map((key) => ({ ...carrier, key }))))(
      'answers 400 for a $carrier credential named $key, and stores nothing',
      async ({ provider, carrier, credentials, key }) => {
        const fresh = await createOrganization(apps.dataSource);
        const response = await create(fresh.adminKey, provider, { credentials: { ...credentials, [key]: 'x' } });
        await expectRefused(response, fresh.organizationId, `credentials.${key} is not a ${carrier} credential`);
      },
    );

    it.each(carriers)('answers 400 for a $carrier setting named toString, and stores nothing', async ({ provider, carrier, credentials }) => {
      const fresh = await createOrganization(apps.dataSource);
      const response = await create(fresh.adminKey, provider, { credentials, settings: { toString: true } });
      await expectRefused(response, fresh.organizationId, `settings.toString is not a ${carrier} setting`);
    });

    it.each(carriers)('answers 400 naming the setting for a $carrier agent_runtime_url Postgres cannot store, and stores nothing', async ({ provider, credentials }) => {
      const fresh = await createOrganization(apps.dataSource);
      const response = await create(fresh.adminKey, provider, { credentials, settings: { agent_runtime_url: 'wss://agents.example/\u0000' } });
      await expectRefused(response, fresh.organizationId, 'settings.agent_runtime_url must not contain NUL characters or unpaired UTF-16 surrogates');
      expect(response.body.details).toEqual([{ field: 'settings', message: expect.stringMatching(/^settings\.agent_runtime_url must not/) }]);
    });

    it('answers 400 when patching Plivo credentials with a constructor key, and keeps the stored ones', async () => {
      const fresh = await createOrganization(apps.dataSource);
      const plivo = carriers[3].credentials;
      const created = await create(fresh.adminKey, 'plivo', { credentials: plivo });
      const response = await apps.client.patch(`${PATH}/${created.body.id}`, { credentials: { ...plivo, constructor: 'x' } }, { key: fresh.adminKey });
      expectError(response, 400, 'validation_failed');
      expect(response.body.message).toContain('credentials.constructor is not a Plivo credential');
      const row = await rowOf(created.body.id);
      expect(apps.api.get(CredentialsCipher).decrypt(row.credentialsEncrypted as string)).toEqual(plivo);
    });

    // Each value goes into an HTTP header (Bearer, or Basic before base64): a control or non-ASCII character
    // either makes the request impossible to send or sends a secret the carrier cannot have issued.
    it.each([
      ['a Telnyx api_key with NUL', 'telnyx', { api_key: 'KEY\u0000SECRET' }, 'credentials.api_key must be visible ASCII'],
      ['a Telnyx api_key with a DEL', 'telnyx', { api_key: 'KEY\u007fSECRET' }, 'credentials.api_key must be visible ASCII'],
      ['a Telnyx api_key with a non-ASCII letter', 'telnyx', { api_key: 'KEYÉSECRET' }, 'credentials.api_key must be visible ASCII'],
      ['a Plivo auth_token with NUL', 'plivo', { auth_token: 'AUTHTOKEN\u0000SECRET0123456789' }, 'credentials.auth_token must be'],
      ['a Plivo auth_token with a non-ASCII letter', 'plivo', { auth_token: 'AUTHTOKENÉSECRET0123456789' }, 'credentials.auth_token must be'],
      ['a Twilio api_key_secret with NUL', 'twilio', { api_key_sid: `SK${'a'.repeat(32)}`, api_key_secret: 'key\u0000secret' }, 'credentials.api_key_secret must be visible ASCII'],
      ['a Twilio api_key_secret with a space', 'twilio', { api_key_sid: `SK${'a'.repeat(32)}`, api_key_secret: 'key secret' }, 'credentials.api_key_secret must be visible ASCII'],
    ])('answers 400 for %s, which no HTTP header can carry as is, and stores nothing', async (_, provider, override, problem) => {
      const fresh = await createOrganization(apps.dataSource);
      const credentials = { ...carriers.find((carrier) => carrier.provider === provider)?.credentials, ...override };
      await expectRefused(await create(fresh.adminKey, provider, { credentials }), fresh.organizationId, problem);
    });
  });

  describe('another organization’s configuration', () => {
    let foreign: any;
    beforeAll(async () => {
      foreign = await createSandboxConfiguration(apps, other, { credentials: SECRET });
    });

    it('returns 404 when reading a telephony configuration that belongs to another organization', async () => {
      expectError(await apps.client.get(`${PATH}/${foreign.id}`, { key: org.adminKey }), 404, 'telephony_configuration_not_found');
    });

    it('returns 404 when patching a telephony configuration that belongs to another organization, and changes nothing', async () => {
      const response = await apps.client.patch(`${PATH}/${foreign.id}`, { name: 'Hijacked', is_default_outbound: true }, { key: org.adminKey });
      expectError(response, 404, 'telephony_configuration_not_found');
      expect(await rowOf(foreign.id)).toMatchObject({ name: foreign.name, isDefaultOutbound: foreign.is_default_outbound });
    });

    it('returns 404 when deleting a telephony configuration that belongs to another organization, and keeps it', async () => {
      expectError(await apps.client.delete(`${PATH}/${foreign.id}`, { key: org.adminKey }), 404, 'telephony_configuration_not_found');
      expect((await apps.client.get(`${PATH}/${foreign.id}`, { key: other.adminKey })).status).toBe(200);
    });

    it('does not list configurations of another organization', async () => {
      const list = await apps.client.get(`${PATH}?limit=200`, { key: org.adminKey });
      expect(list.body.next_cursor).toBeNull();
      expect(list.body.telephony_configurations.map((config: { id: number }) => config.id)).not.toContain(foreign.id);
    });
  });

  it.each([
    ['GET', `${PATH}/abc`],
    ['PATCH', `${PATH}/0`],
    ['DELETE', `${PATH}/1e`],
  ])('answers 400 for a malformed id: %s %s', async (method, path) => {
    const body = method === 'PATCH' ? { name: 'x' } : undefined;
    expectError(await apps.client.request(method, path, body, { key: org.adminKey }), 400, 'validation_failed');
  });

  it.each([
    ['GET', `${PATH}/99999999999`],
    ['PATCH', `${PATH}/99999999999`],
    ['DELETE', `${PATH}/2147483648`],
  ])('answers 404 for an id beyond the id range: %s %s', async (method, path) => {
    const body = method === 'PATCH' ? { name: 'x' } : undefined;
    expectError(await apps.client.request(method, path, body, { key: org.adminKey }), 404, 'telephony_configuration_not_found');
  });

  describe.each([
    ['POST', PATH, { name: 'x', provider: 'sandbox', from_numbers: [] }],
    ['GET', PATH, undefined],
    ['GET', `${PATH}/1`, undefined],
    ['PATCH', `${PATH}/1`, { name: 'x' }],
    ['DELETE', `${PATH}/1`, undefined],
  ])('%s %s', (method, path, body) => {
    it('answers 401 without a key', async () => {
      expectError(await apps.client.request(method, path, body, {}), 401, 'unauthorized');
    });

    it('answers 403 with a trigger key', async () => {
      const { key } = await issueKey(apps, org, 'trigger');
      expectError(await apps.client.request(method, path, body, { key }), 403, 'forbidden');
    });
  });
});
