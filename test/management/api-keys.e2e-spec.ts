import { request as httpRequest } from 'node:http';
import { ApiKey } from '@app/persistence';
import { ApiKeysService } from '../../apps/api/src/api-keys/api-keys.service';
import { ApiKeyAuthenticator } from '../../apps/api/src/auth/api-key-authenticator.service';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { backendPid, waitersOn } from '../support/lock-waiters';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { createWorkflow, expectError, issueKey } from './management-helpers';

describe('management API: API keys', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let other: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource);
    other = await createOrganization(apps.dataSource, 'Other org');
  });
  afterAll(() => apps.close());

  it('creates a trigger key and shows the key once, with its prefix', async () => {
    const response = await apps.client.post('/api/v1/api-keys', { name: '  CRM  ', role: 'trigger' }, { key: org.adminKey });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.any(Number),
      name: 'CRM',
      role: 'trigger',
      workflow_ids: null,
      key: expect.stringMatching(/^vak_[A-Za-z0-9_-]{40}$/),
      key_prefix: expect.any(String),
      created_at: expect.any(String),
    });
    expect(response.body.key.startsWith(response.body.key_prefix)).toBe(true);
    const row = await apps.dataSource.getRepository(ApiKey).findOneByOrFail({ id: response.body.id });
    expect(row).toMatchObject({ organizationId: org.organizationId, role: 'trigger', revokedAt: null });
    expect(row.keyHash).not.toContain(response.body.key);
    // The new key authenticates: a trigger key is known (403 on admin routes), not unknown (401).
    expectError(await apps.client.get('/api/v1/api-keys', { key: response.body.key }), 403, 'forbidden');
  });

  it('creates an admin key that can use the management API, also as a bearer token', async () => {
    const { key } = await issueKey(apps, org, 'admin');
    const response = await apps.client.get('/api/v1/api-keys', { key, bearer: true });
    expect(response.status).toBe(200);
  });

  it('lists the organization’s keys without secrets, newest first', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await issueKey(apps, fresh, 'trigger');
    const second = await issueKey(apps, fresh, 'admin');
    await issueKey(apps, other, 'trigger');

    const response = await apps.client.get('/api/v1/api-keys', { key: fresh.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.api_keys.map((key: { id: number }) => key.id)).toEqual([second.id, first.id, expect.any(Number)]);
    expect(response.body.next_cursor).toBeNull();
    expect(response.body.api_keys[0]).toEqual({
      id: second.id,
      name: 'admin key',
      role: 'admin',
      workflow_ids: null,
      key_prefix: second.key.slice(0, response.body.api_keys[0].key_prefix.length),
      created_at: expect.any(String),
      revoked_at: null,
    });
    for (const secret of [first.key, second.key, fresh.adminKey]) expect(response.text).not.toContain(secret);
    expect(response.text).not.toContain('key_hash');
  });

  it('restricts a trigger key to workflows of the organization', async () => {
    const a = await createWorkflow(apps, org);
    const b = await createWorkflow(apps, org);
    const response = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'restricted', role: 'trigger', workflow_ids: [b.id, a.id, b.id] },
      { key: org.adminKey },
    );
    expect(response.status).toBe(201);
    expect(response.body.workflow_ids).toEqual([a.id, b.id].sort((x, y) => x - y));
    const row = await apps.dataSource.getRepository(ApiKey).findOneByOrFail({ id: response.body.id });
    expect(row.workflowIds).toEqual(response.body.workflow_ids);
  });

  it('returns 404 workflow_not_found when workflow_ids names a workflow of another organization', async () => {
    const foreign = await createWorkflow(apps, other);
    const mine = await createWorkflow(apps, org);
    const before = await apps.dataSource.getRepository(ApiKey).countBy({ organizationId: org.organizationId });
    const response = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'sneaky', role: 'trigger', workflow_ids: [mine.id, foreign.id] },
      { key: org.adminKey },
    );
    expectError(response, 404, 'workflow_not_found');
    expect(response.body.message).toContain(String(foreign.id));
    expect(await apps.dataSource.getRepository(ApiKey).countBy({ organizationId: org.organizationId })).toBe(before);
  });

  it('returns 404 workflow_not_found when workflow_ids names a workflow that does not exist', async () => {
    const response = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'ghost', role: 'trigger', workflow_ids: [2_000_000_000] },
      { key: org.adminKey },
    );
    expectError(response, 404, 'workflow_not_found');
  });

  it('rejects workflow_ids on an admin key, which reaches every workflow', async () => {
    const workflow = await createWorkflow(apps, org);
    const response = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'admin', role: 'admin', workflow_ids: [workflow.id] },
      { key: org.adminKey },
    );
    expectError(response, 400, 'validation_failed');
  });

  it.each([
    ['a missing name', { role: 'trigger' }],
    ['a blank name', { name: '   ', role: 'trigger' }],
    ['an unknown role', { name: 'x', role: 'owner' }],
    ['a missing role', { name: 'x' }],
    ['an unknown field', { name: 'x', role: 'trigger', scopes: ['all'] }],
    ['non-integer workflow ids', { name: 'x', role: 'trigger', workflow_ids: ['1'] }],
    ['an empty workflow_ids', { name: 'x', role: 'trigger', workflow_ids: [] }],
    ['a workflow id beyond the id range', { name: 'x', role: 'trigger', workflow_ids: [99_999_999_999] }],
    ['workflow_ids that is not an array', { name: 'x', role: 'trigger', workflow_ids: 3 }],
  ])('answers 400 validation_failed for %s', async (_, body) => {
    const before = await apps.dataSource.getRepository(ApiKey).countBy({ organizationId: org.organizationId });
    expectError(await apps.client.post('/api/v1/api-keys', body, { key: org.adminKey }), 400, 'validation_failed');
    expect(await apps.dataSource.getRepository(ApiKey).countBy({ organizationId: org.organizationId })).toBe(before);
  });

  it('revokes a key: 204, listed with revoked_at, and the key answers 401 at once on this replica', async () => {
    const victim = await issueKey(apps, org, 'admin');
    // Served once, so this replica has the key cached as valid.
    expect((await apps.client.get('/api/v1/api-keys', { key: victim.key })).status).toBe(200);

    const response = await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey });
    expect(response.status).toBe(204);
    expect(response.text).toBe('');

    expectError(await apps.client.get('/api/v1/api-keys', { key: victim.key }), 401, 'unauthorized');
    const listed = await apps.client.get('/api/v1/api-keys?limit=200', { key: org.adminKey });
    const entry = listed.body.api_keys.find((key: { id: number }) => key.id === victim.id);
    expect(entry.revoked_at).toEqual(expect.any(String));
  });

  it("refuses to revoke the organization's last admin key, by itself or by another, with 409 last_admin_key", async () => {
    const lone = await createOrganization(apps.dataSource, 'One admin');
    const [{ id: loneKeyId }]: Array<{ id: number }> = await apps.dataSource.query(
      `SELECT id FROM api_keys WHERE organization_id = $1 AND role = 'admin'`,
      [lone.organizationId],
    );
    expectError(await apps.client.delete(`/api/v1/api-keys/${loneKeyId}`, { key: lone.adminKey }), 409, 'last_admin_key');
    expect((await apps.client.get('/api/v1/api-keys', { key: lone.adminKey })).status).toBe(200);

    // With a second admin key, either may go, but not both: two revocations at once leave one. Both are sent while
    // the organization's row is held elsewhere, so both are under way together when it is let go.
    const second = await issueKey(apps, lone, 'admin');
    const holder = apps.dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    let outcomes: PromiseSettledResult<void>[];
    try {
      await holder.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [lone.organizationId]);
      const keys = apps.api.get(ApiKeysService);
      const revocations = Promise.allSettled([keys.revoke(lone.organizationId, loneKeyId), keys.revoke(lone.organizationId, second.id)]);
      await waitersOn(apps.dataSource, await backendPid(holder), 2, 'both revocations to wait on the organization');
      await holder.commitTransaction();
      outcomes = await revocations;
    } finally {
      await holder.release();
    }
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(outcomes.find((outcome) => outcome.status === 'rejected')).toMatchObject({ reason: { status: 409, code: 'last_admin_key' } });
    const active = await apps.dataSource.query(`SELECT id FROM api_keys WHERE organization_id = $1 AND role = 'admin' AND revoked_at IS NULL`, [
      lone.organizationId,
    ]);
    expect(active).toHaveLength(1);
  });

  it('keeps the first revocation time when a key is revoked twice', async () => {
    const victim = await issueKey(apps, org, 'trigger');
    expect((await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey })).status).toBe(204);
    const first = await apps.dataSource.getRepository(ApiKey).findOneByOrFail({ id: victim.id });
    expect((await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey })).status).toBe(204);
    const second = await apps.dataSource.getRepository(ApiKey).findOneByOrFail({ id: victim.id });
    expect(second.revokedAt).toEqual(first.revokedAt);
  });

  /**
   * A request whose head (and half its body) is sent now and the rest on `finish`: its key is checked on the head,
   * before the body arrives.
   */
  function slowBody(baseUrl: string, path: string, key: string, body: string) {
    const url = new URL(path, baseUrl);
    const half = Math.floor(body.length / 2);
    const request = httpRequest(url, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }));
      });
      request.on('error', reject);
    });
    request.write(body.slice(0, half));
    return { answer, finish: () => request.end(body.slice(half)) };
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('refuses a request whose body was still arriving when its key was revoked on this replica, and does nothing of it', async () => {
    const victim = await issueKey(apps, org, 'admin');
    const name = `made while revoked ${Date.now()}`;
    const late = slowBody(apps.config.publicBaseUrl, '/api/v1/api-keys', victim.key, JSON.stringify({ name, role: 'admin' }));
    // The head is checked (and the key found good) before the revocation.
    await sleep(300);
    expect((await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey })).status).toBe(204);
    late.finish();
    const answer = await late.answer;
    expect({ status: answer.status, code: answer.body?.code }).toEqual({ status: 401, code: 'unauthorized' });
    expect(await apps.dataSource.getRepository(ApiKey).countBy({ name })).toBe(0);
  });

  it('refuses a request whose body took longer than a cached key lives to arrive, once the key is revoked on another replica', async () => {
    const replica = await startTestApps({ dialer: false });
    try {
      const victim = await issueKey(apps, org, 'admin');
      const name = `made while revoked elsewhere ${Date.now()}`;
      const late = slowBody(replica.config.publicBaseUrl, '/api/v1/api-keys', victim.key, JSON.stringify({ name, role: 'admin' }));
      await sleep(300);
      expect((await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey })).status).toBe(204);
      await sleep(replica.api.get(ApiKeyAuthenticator).checkLifetimeMs + 200);
      late.finish();
      const answer = await late.answer;
      expect({ status: answer.status, code: answer.body?.code }).toEqual({ status: 401, code: 'unauthorized' });
      expect(await apps.dataSource.getRepository(ApiKey).countBy({ name })).toBe(0);
    } finally {
      await replica.close();
    }
  });

  it('answers 401 for a revoked key on another replica within 5 seconds', async () => {
    const replica = await startTestApps({ dialer: false });
    try {
      const victim = await issueKey(apps, org, 'admin');
      expect((await replica.client.get('/api/v1/api-keys', { key: victim.key })).status).toBe(200);
      expect((await apps.client.delete(`/api/v1/api-keys/${victim.id}`, { key: org.adminKey })).status).toBe(204);
      // The 5 seconds are the wait's own bound: it fails unless a read asked within them is refused.
      await waitFor(
        async () => ((await replica.client.get('/api/v1/api-keys', { key: victim.key })).status === 401 ? true : undefined),
        { timeoutMs: 5000, intervalMs: 100, what: 'the other replica to refuse the revoked key' },
      );
    } finally {
      await replica.close();
    }
  });

  it('returns 404 when the key belongs to another organization, and leaves it working', async () => {
    const foreign = await issueKey(apps, other, 'admin');
    expectError(await apps.client.delete(`/api/v1/api-keys/${foreign.id}`, { key: org.adminKey }), 404, 'api_key_not_found');
    expect((await apps.client.get('/api/v1/api-keys', { key: foreign.key })).status).toBe(200);
    const row = await apps.dataSource.getRepository(ApiKey).findOneByOrFail({ id: foreign.id });
    expect(row.revokedAt).toBeNull();
  });

  it('pages the list with limit and cursor, as the other lists', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const issued = [await issueKey(apps, fresh, 'trigger'), await issueKey(apps, fresh, 'trigger')];
    const [bootstrapKey] = (await apps.client.get('/api/v1/api-keys', { key: fresh.adminKey })).body.api_keys.slice(-1);
    const pages: number[][] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const query: string = cursor ? `&cursor=${cursor}` : '';
      const page = await apps.client.get(`/api/v1/api-keys?limit=2${query}`, { key: fresh.adminKey });
      expect(page.status).toBe(200);
      pages.push(page.body.api_keys.map((key: { id: number }) => key.id));
      cursor = page.body.next_cursor as string | null;
    }
    expect(pages).toEqual([[issued[1].id, issued[0].id], [bootstrapKey.id]]);
    expectError(await apps.client.get('/api/v1/api-keys?limit=201', { key: fresh.adminKey }), 400, 'validation_failed');
    expectError(await apps.client.get('/api/v1/api-keys?cursor=%24', { key: fresh.adminKey }), 400, 'validation_failed');
  });

  it('does not list keys of another organization', async () => {
    const foreign = await issueKey(apps, other, 'trigger');
    const response = await apps.client.get('/api/v1/api-keys?limit=200', { key: org.adminKey });
    expect(response.body.next_cursor).toBeNull();
    expect(response.body.api_keys.map((key: { id: number }) => key.id)).not.toContain(foreign.id);
  });

  it('answers 400 for a malformed key id and 404 for one beyond the id range', async () => {
    expectError(await apps.client.delete('/api/v1/api-keys/abc', { key: org.adminKey }), 400, 'validation_failed');
    expectError(await apps.client.delete('/api/v1/api-keys/99999999999', { key: org.adminKey }), 404, 'api_key_not_found');
  });

  describe.each([
    ['POST', '/api/v1/api-keys', { name: 'x', role: 'admin' }],
    ['GET', '/api/v1/api-keys', undefined],
    ['DELETE', '/api/v1/api-keys/1', undefined],
  ])('%s %s', (method, path, body) => {
    it('answers 401 without a key', async () => {
      expectError(await apps.client.request(method, path, body, {}), 401, 'unauthorized');
    });

    it('answers 401 with an unknown key', async () => {
      expectError(await apps.client.request(method, path, body, { key: 'vak_not-a-real-key' }), 401, 'unauthorized');
    });

    it('answers 403 with a trigger key', async () => {
      const { key } = await issueKey(apps, org, 'trigger');
      expectError(await apps.client.request(method, path, body, { key }), 403, 'forbidden');
    });
  });
});
