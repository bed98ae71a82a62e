import { agentGraph, createOrganization, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { IdempotencyKeys } from '../../apps/api/src/idempotency/idempotency-keys.service';
import { RunIntake } from '../../apps/api/src/triggers/run-intake.service';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

describe('Idempotency-Key on the trigger endpoints', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let uuid: string;
  let workflowId: number;
  const body = { phone_number: '+14155550100', initial_context: { order: 7 } };

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 20 } });
    const seeded = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id), draft: (id) => agentGraph(id) });
    uuid = seeded.triggerUuid;
    workflowId = seeded.workflowId;
  });
  afterAll(() => apps.close());

  const post = (key: string, payload: unknown = body, path = `/api/v1/public/agent/${uuid}`, apiKey = org.adminKey) =>
    apps.client.post(path, payload, { key: apiKey, headers: { 'idempotency-key': key } });

  /** A trigger key of the organization limited to these agents. */
  async function limitedKey(workflowIds: number[]): Promise<string> {
    const created = await apps.client.post(
      '/api/v1/api-keys',
      { name: `agents ${workflowIds.join(', ')} only`, role: 'trigger', workflow_ids: workflowIds },
      { key: org.adminKey },
    );
    expect(created.status).toBe(201);
    return created.body.key as string;
  }

  async function runCount(): Promise<number> {
    const [row] = await apps.dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE organization_id = $1`, [org.organizationId]);
    return row.n;
  }

  it('replays the first answer for a repeat with the same body, without a second run or call', async () => {
    const before = await runCount();
    const first = await post('order-7');
    const repeat = await post('order-7', { initial_context: { order: 7 }, phone_number: '+1 415 555 0100' });
    expect(first.status).toBe(200);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await runCount()).toBe(before + 1);
    const runId = first.body.workflow_run_id;
    await waitFor(async () => ((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId) ? true : undefined));
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });

  it('takes a field sent as null, or an empty initial_context, as the same request as one without it', async () => {
    const phone = { phone_number: body.phone_number };
    const first = await post('order-null', phone);
    expect(first.status).toBe(200);
    for (const repeat of [
      { ...phone, telephony_configuration_id: null },
      { ...phone, initial_context: null },
      { ...phone, initial_context: {} },
      { initial_context: null, ...phone, telephony_configuration_id: null },
    ]) {
      const answer = await post('order-null', repeat);
      expect({ status: answer.status, body: answer.body, replayed: answer.headers.get('idempotent-replayed') }).toEqual({
        status: 200,
        body: first.body,
        replayed: 'true',
      });
    }
    expect((await post('order-null', { ...phone, initial_context: { order: 1 } })).status).toBe(422);
  });

  it('still replays a key claimed with the hash an earlier version wrote for a body with nulls', async () => {
    const sent = { phone_number: body.phone_number, initial_context: null, telephony_configuration_id: null };
    const { IdempotencyKeys } = await import('../../apps/api/src/idempotency/idempotency-keys.service');
    const first = await post('order-former', sent);
    expect(first.status).toBe(200);
    // As a gateway before the normal form stored it: the parsed body's own hash.
    const former = IdempotencyKeys.fingerprint(`production ${uuid}`, sent);
    await apps.dataSource.query(`UPDATE idempotency_keys SET request_hash = $3 WHERE organization_id = $1 AND key = $2`, [
      org.organizationId,
      'order-former',
      former,
    ]);

    const repeat = await post('order-former', sent);

    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    expect((await post('order-former', { phone_number: body.phone_number })).status).toBe(422);
  });

  it('answers 422 when the same key comes with a different body', async () => {
    expect((await post('order-8')).status).toBe(200);
    const changed = await post('order-8', { ...body, initial_context: { order: 9 } });
    expect(changed.status).toBe(422);
    expect(changed.body).toMatchObject({ statusCode: 422, code: 'idempotency_key_reused' });
  });

  it('answers 422 when the same key is used on the test URL after the production one', async () => {
    expect((await post('order-10')).status).toBe(200);
    const other = await post('order-10', body, `/api/v1/public/agent/test/${uuid}`);
    expect(other.status).toBe(422);
  });

  // A gateway of an earlier version claimed a key before storing its run: such a claim still answers 409 until it is presumed dead.
  it('answers 409 while a key is claimed without a run, and lets a repeat take over a dead claim', async () => {
    const hash = (await import('../../apps/api/src/idempotency/idempotency-keys.service')).IdempotencyKeys.fingerprint(
      `production ${uuid}`,
      { phone_number: body.phone_number, initial_context: body.initial_context },
    );
    await apps.dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       VALUES ($1, 'in-flight', $2, NULL, now() + interval '1 minute', now() + interval '1 day')`,
      [org.organizationId, hash],
    );
    const busy = await post('in-flight');
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('idempotency_request_in_flight');

    await apps.dataSource.query(`UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = 'in-flight'`);
    const takenOver = await post('in-flight');
    expect(takenOver.status).toBe(200);
    expect((await post('in-flight')).body).toEqual(takenOver.body);
  });

  it('creates exactly one run when many requests with one key race each other, and answers it to all of them', async () => {
    const before = await runCount();
    const answers = await Promise.all(Array.from({ length: 12 }, () => post('race-1')));
    // The key is claimed by the statement that stores the run: a racing repeat waits for it and replays the run.
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((answer) => answer.body.workflow_run_id)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await runCount()).toBe(before + 1);
  });

  it('replays a repeat after its trigger was deactivated, and still answers 422 to the key with another body', async () => {
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const path = `/api/v1/public/agent/${workflow.triggerUuid}`;
    const first = await post('before-deactivation', body, path);
    expect(first.status).toBe(200);
    const off = await apps.client.patch(`/api/v1/triggers/${workflow.triggerUuid}`, { is_active: false }, { key: org.adminKey });
    expect(off.status).toBe(200);

    const repeat = await post('before-deactivation', body, path);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    const changed = await post('before-deactivation', { ...body, initial_context: { order: 8 } }, path);
    expect(changed.status).toBe(422);
    expect(changed.body.code).toBe('idempotency_key_reused');
    const fresh = await post('after-deactivation', body, path);
    expect(fresh.status).toBe(404);
    expect(fresh.body.code).toBe('trigger_not_found');
  });

  it('answers a repeat refused by its checks with the run of a first request still storing it, not the refusal', async () => {
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const path = `/api/v1/public/agent/${workflow.triggerUuid}`;
    // The first request's body as it is stored: taken from a request of its own, under another key.
    const model = await post('storing-model', body, path);
    expect(model.status).toBe(200);
    const [{ request_hash: requestHash }] = await apps.dataSource.query(
      `SELECT request_hash FROM idempotency_keys WHERE organization_id = $1 AND key = 'storing-model'`,
      [org.organizationId],
    );
    const off = await apps.client.patch(`/api/v1/triggers/${workflow.triggerUuid}`, { is_active: false }, { key: org.adminKey });
    expect(off.status).toBe(200);

    // The first request, past its checks before the deactivation, is storing its run: its claim is not committed.
    const first = apps.dataSource.createQueryRunner();
    await first.connect();
    try {
      await first.startTransaction();
      await first.query(
        `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
         VALUES ($1, 'storing', $2, $3, now(), now() + interval '1 day')`,
        [org.organizationId, requestHash, model.body.workflow_run_id],
      );
      const repeat = post('storing', body, path);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await first.commitTransaction();
      const answer = await repeat;
      expect(answer.status).toBe(200);
      expect(answer.body.workflow_run_id).toBe(model.body.workflow_run_id);
      expect(answer.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      if (first.isTransactionActive) await first.rollbackTransaction();
      await first.release();
    }
    // A key nothing holds still gets the refusal, and keeps nothing of the look.
    const fresh = await post('never-stored', body, path);
    expect(fresh.status).toBe(404);
    expect(await apps.dataSource.query(`SELECT 1 FROM idempotency_keys WHERE organization_id = $1 AND key = 'never-stored'`, [org.organizationId])).toEqual([]);
  });

  it('answers a repeat refused by its checks with the run of a first request still waiting on this gateway to be stored', async () => {
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const path = `/api/v1/public/agent/${workflow.triggerUuid}`;
    const intake = apps.api.get(RunIntake);
    const accept = intake.accept.bind(intake);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const waiting = new Promise<void>((resolve) => (reached = resolve));
    // The first request is past its checks and waits for a grouped insert to take it (a database slow to answer).
    const spy = jest.spyOn(intake, 'accept').mockImplementation(async (run) => {
      if (run.idempotency?.key !== 'waiting') return accept(run);
      reached();
      await held;
      return accept(run);
    });
    try {
      const first = post('waiting', body, path);
      await waiting;
      const off = await apps.client.patch(`/api/v1/triggers/${workflow.triggerUuid}`, { is_active: false }, { key: org.adminKey });
      expect(off.status).toBe(200);
      // Refused by its checks (its trigger is off now), the repeat waits for the first request before it answers.
      const repeat = post('waiting', body, path);
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      const [firstAnswer, repeatAnswer] = await Promise.all([first, repeat]);
      expect(firstAnswer.status).toBe(200);
      expect({ status: repeatAnswer.status, run: repeatAnswer.body.workflow_run_id, replayed: repeatAnswer.headers.get('idempotent-replayed') }).toEqual({
        status: 200,
        run: firstAnswer.body.workflow_run_id,
        replayed: 'true',
      });
    } finally {
      release();
      spy.mockRestore();
    }
    const [{ n }] = await apps.dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE workflow_id = $1`, [workflow.workflowId]);
    expect(n).toBe(1);
  });

  it('keeps keys per organization', async () => {
    const other = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, other.organizationId, { settings: { ring_ms: 10, talk_ms: 20 } });
    const otherUuid = (await seedWorkflow(apps.dataSource, other.organizationId, { published: (id) => agentGraph(id) })).triggerUuid;
    const mine = await post('shared-key');
    const theirs = await post('shared-key', body, `/api/v1/public/agent/${otherUuid}`, other.adminKey);
    expect(theirs.status).toBe(200);
    expect(theirs.body.workflow_run_id).not.toBe(mine.body.workflow_run_id);
  });

  it("answers 403 to a repeat from another of the organization's keys that has no access to the agent", async () => {
    const other = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const restricted = await limitedKey([other.workflowId]);
    const first = await post('order-for-another-key');
    expect(first.status).toBe(200);
    const repeat = await post('order-for-another-key', body, `/api/v1/public/agent/${uuid}`, restricted);
    expect(repeat.status).toBe(403);
    expect(repeat.body).toMatchObject({ code: 'forbidden' });
    expect(repeat.body.workflow_run_id).toBeUndefined();
  });

  it('tells a key limited to other agents nothing of what a held key carries, on any agent and with any body', async () => {
    const other = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const restricted = await limitedKey([other.workflowId]);
    const first = await post('order-of-another-integration');
    expect(first.status).toBe(200);
    const before = await runCount();
    // Guessing the body (a 422 against a 403 would confirm the guess), on the agent the run belongs to, or on its own.
    const probes = [
      post('order-of-another-integration', { ...body, phone_number: '+14155550199' }, `/api/v1/public/agent/${uuid}`, restricted),
      post('order-of-another-integration', body, `/api/v1/public/agent/${other.triggerUuid}`, restricted),
      post('order-of-another-integration', { ...body, phone_number: '+14155550199' }, `/api/v1/public/agent/${other.triggerUuid}`, restricted),
    ];
    for (const probe of await Promise.all(probes)) {
      expect({ status: probe.status, code: probe.body.code, run: probe.body.workflow_run_id }).toEqual({ status: 403, code: 'forbidden', run: undefined });
    }
    expect(await runCount()).toBe(before);
    // The key's own agent: an unused key starts a run as ever, and the admin key still gets its 422 for another body.
    expect((await post('order-of-this-integration', body, `/api/v1/public/agent/${other.triggerUuid}`, restricted)).status).toBe(200);
    const reused = await post('order-of-another-integration', { ...body, phone_number: '+14155550199' });
    expect({ status: reused.status, code: reused.body.code }).toEqual({ status: 422, code: 'idempotency_key_reused' });
    // A key limited to the run's own agent is told as an admin key is: the run again for the same body, 422 for another.
    const own = await limitedKey([workflowId]);
    const replayed = await post('order-of-another-integration', body, `/api/v1/public/agent/${uuid}`, own);
    expect({ status: replayed.status, run: replayed.body.workflow_run_id, replayed: replayed.headers.get('idempotent-replayed') }).toEqual({
      status: 200,
      run: first.body.workflow_run_id,
      replayed: 'true',
    });
    const otherBody = await post('order-of-another-integration', { ...body, phone_number: '+14155550199' }, `/api/v1/public/agent/${uuid}`, own);
    expect({ status: otherBody.status, code: otherBody.body.code }).toEqual({ status: 422, code: 'idempotency_key_reused' });
    expect(await runCount()).toBe(before + 1);
  });

  it("refuses a UUID no trigger has, or another organization's, without looking at the key: no such request was ever taken", async () => {
    const others = await createOrganization(apps.dataSource);
    const foreign = await seedWorkflow(apps.dataSource, others.organizationId, { published: (id) => agentGraph(id) });
    const looked = jest.spyOn(apps.api.get(IdempotencyKeys), 'earlierRunOnceSettled');
    const claimed = jest.spyOn(apps.api.get(IdempotencyKeys), 'earlierRun');
    try {
      const unknown = await post('made-up-uuid', body, '/api/v1/public/agent/00000000-0000-4000-8000-000000000000');
      expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: 'trigger_not_found' });
      const theirs = await post('made-up-uuid', body, `/api/v1/public/agent/${foreign.triggerUuid}`);
      expect({ status: theirs.status, code: theirs.body.code }).toEqual({ status: 403, code: 'forbidden' });
      expect(looked).not.toHaveBeenCalled();
      expect(claimed).not.toHaveBeenCalled();
    } finally {
      looked.mockRestore();
      claimed.mockRestore();
    }
    const [{ n }] = await apps.dataSource.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE organization_id = $1 AND key = 'made-up-uuid'`, [
      org.organizationId,
    ]);
    expect(n).toBe(0);
  });

  it('starts afresh once a key has expired', async () => {
    const first = await post('old-key');
    await apps.dataSource.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'old-key'`);
    const again = await post('old-key');
    expect(again.status).toBe(200);
    expect(again.body.workflow_run_id).not.toBe(first.body.workflow_run_id);
  });

  it('holds no key for a request that fails, so a corrected retry is processed', async () => {
    const failed = await post('fix-me', body, `/api/v1/public/agent/00000000-0000-4000-8000-000000000000`);
    expect(failed.status).toBe(404);
    const [row] = await apps.dataSource.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'fix-me'`);
    expect(row.n).toBe(0);
    const corrected = await post('fix-me');
    expect(corrected.status).toBe(200);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
  });

  it('rejects a malformed Idempotency-Key with 400', async () => {
    const response = await post('x'.repeat(256));
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
  });
});
