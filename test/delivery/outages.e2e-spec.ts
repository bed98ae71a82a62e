import { ServiceUnavailableException } from '@nestjs/common';
import { CallEventsQueue, CallsQueue } from '@app/queue';
import { AgentSessionTokens } from '@app/telephony';
import {
  agentGraph,
  createOrganization,
  seedSandboxConfiguration,
  seedStrandedDialingRun,
  seedWorkflow,
  SeededWorkflow,
  TestOrganization,
} from '../support/fixtures';
import { sandboxSigned } from '../support/sandbox-webhook';
import { TcpProxy } from '../support/tcp-proxy';
import { createIsolatedResources, IsolatedResources } from '../support/isolated-resources';
import { startTestApps, TestApps } from '../support/test-apps';
import { testRunResources } from '../support/test-run-id';
import { waitFor } from '../support/wait-for';
import { HealthController } from '../../libs/health/src/health.controller';

describe('outages of Redis and Postgres', () => {
  describe('Redis down when a trigger arrives', () => {
    const redis = new TcpProxy('127.0.0.1', 6379);
    let apps: TestApps;
    let org: TestOrganization;
    let uuid: string;
    let workflowId: number;
    let workflow: SeededWorkflow;
    let configurationId: number;
    let own: IsolatedResources;

    beforeAll(async () => {
      const port = await redis.start();
      // Its own database and queue: the dispatcher sweeps every queued run, and must find only this suite's.
      own = await createIsolatedResources('redis_outage');
      apps = await startTestApps({ env: { ...own.env, REDIS_URL: `redis://127.0.0.1:${port}`, DISPATCH_INTERVAL_MS: '200' } });
      org = await createOrganization(apps.dataSource);
      configurationId = (await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 20 } })).id;
      workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
      uuid = workflow.triggerUuid;
      workflowId = workflow.workflowId;
    });
    afterAll(async () => {
      await redis.restore();
      await apps.close();
      await redis.stop();
      await own.drop();
    });

    it('still answers 200 without waiting for Redis, and the run is dialed within 5 s of Redis returning', async () => {
      await redis.cut();
      const started = Date.now();
      const response = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      expect(response.status).toBe(200);
      // The enqueue gives up after ENQUEUE_TIMEOUT_MS (500 ms); a gateway that waited for Redis would not answer
      // before Redis returns, below, which is the test's whole length away. 3 s leaves a loaded machine its slack.
      expect(Date.now() - started).toBeLessThan(3000);
      const runId = response.body.workflow_run_id;
      const [stored] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
      expect(stored.status).toBe('queued');
      // Nothing is left waiting for Redis in the gateway's memory: counting a backlog fails at once, as the enqueue
      // does, rather than waiting for Redis to return (a long outage would pile up every trigger's count).
      const asked = Date.now();
      await expect(apps.api.get(CallsQueue).countIn([org.organizationId])).rejects.toThrow();
      expect(Date.now() - asked).toBeLessThan(3000);

      await new Promise((resolve) => setTimeout(resolve, 500));
      await redis.restore();
      // The 5 seconds are the wait's own bound: it fails unless a read made within them finds the run dialed.
      await waitFor(
        async () => {
          const [row] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
          return row.status !== 'queued' ? true : undefined;
        },
        { timeoutMs: 5000, what: 'the run to leave queued after Redis returned' },
      );
      const run = await waitFor(async () => {
        const current = (await apps.client.get(`/api/v1/workflow/${workflowId}/runs/${runId}`, { key: org.adminKey })).body;
        return current.is_completed ? current : undefined;
      });
      expect(run.status).toBe('completed');
    });

    it('keeps the API ready while Redis is away, since it takes triggers without it, and not the dialer', async () => {
      const dialerReadiness = () =>
        apps.dialer!.get(HealthController)
          .ready()
          .then(
            (result) => ({ status: 200, details: result.details }),
            (error: ServiceUnavailableException) => ({ status: error.getStatus(), details: (error.getResponse() as { details: unknown }).details }),
          );
      expect(await dialerReadiness()).toEqual({ status: 200, details: { postgres: { status: 'up' }, redis: { status: 'up' } } });
      await redis.cut();
      try {
        const down = await waitFor(async () => {
          const readiness = await dialerReadiness();
          return readiness.status === 503 ? readiness : undefined;
        }, { what: "the dialer's readiness to see Redis away" });
        expect(down.details).toMatchObject({ postgres: { status: 'up' }, redis: { status: 'down' } });
        const ready = await apps.client.get('/health/ready');
        expect(ready.status).toBe(200);
        expect(ready.body.details).toEqual({ postgres: { status: 'up' } });
      } finally {
        await redis.restore();
      }
    });

    it("answers a carrier's webhook 503 while Redis is away, remembering nothing, so its retry is taken", async () => {
      const trigger = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      expect(trigger.status).toBe(200);
      const webhook = sandboxSigned(`${apps.baseUrl}/api/v1/telephony/sandbox/status/${trigger.body.workflow_run_id}`, apps.config.secretsKey);
      const deliver = async () => {
        const response = await fetch(webhook.url, { method: webhook.method, headers: webhook.headers, body: webhook.rawBody });
        return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
      };

      await redis.cut();
      const away = await deliver();
      await redis.restore();
      expect(away).toEqual({
        status: 503,
        retryAfter: '1',
        body: { statusCode: 503, code: 'service_unavailable', message: 'The queue is unavailable; retry shortly', request_id: expect.any(String) },
      });
      // The gateway's Redis client reconnects by itself: the carrier's retry is taken once, and a copy after it is a replay.
      const retried = await waitFor(async () => {
        const answer = await deliver();
        return answer.status === 503 ? undefined : answer;
      });
      expect(retried).toMatchObject({ status: 200, body: { received: true } });
      expect(await deliver()).toMatchObject({ status: 403, body: { code: 'webhook_signature_invalid' } });
    });

    it("takes an agent's closing report while Redis is away: the report is stored, and only the dialers' nudge is lost", async () => {
      const runId = await seedStrandedDialingRun(apps.dataSource, {
        organizationId: org.organizationId,
        workflow,
        telephonyConfigurationId: configurationId,
        provider: 'sandbox',
        to: '+14155550100',
        from: '+15005550006',
        dialedSecondsAgo: 0,
      });
      const token = new AgentSessionTokens(apps.config.secretsKey).sign({ runId, expiresAt: Math.floor(Date.now() / 1000) + 600 });
      // What became of the nudge to the dialers: it must have been tried, and failed.
      const events = apps.api.get(CallEventsQueue);
      const enqueue = events.enqueueEvent.bind(events);
      const nudges: Array<Promise<unknown>> = [];
      const spy = jest.spyOn(events, 'enqueueEvent').mockImplementation((...args) => {
        const attempt = enqueue(...args);
        nudges.push(attempt.then(() => 'queued', (error: Error) => error.message));
        return attempt;
      });
      await redis.cut();
      let ended;
      try {
        // No read of the session first: the runtime is waited for all the same.
        ended = await apps.client.post(`/api/v1/agent-sessions/${encodeURIComponent(token)}/events`, {
          events: [{ type: 'transcript', speaker: 'agent', text: 'Goodbye.', start_ms: 0, end_ms: 900 }, { type: 'session_ended' }],
        });
      } finally {
        spy.mockRestore();
        await redis.restore();
      }
      expect(ended.status).toBe(200);
      expect(ended.body).toEqual({ accepted: 2 });
      expect(await Promise.all(nudges)).toEqual([expect.stringMatching(/Stream isn't writeable|Connection is closed/)]);
      const [stored] = await apps.dataSource.query(
        `SELECT agent_session_started_at IS NOT NULL AS started, agent_session_ended_at IS NOT NULL AS ended, agent_transcript
           FROM workflow_runs WHERE id = $1`,
        [runId],
      );
      expect(stored.started).toBe(true);
      expect(stored.ended).toBe(true);
      expect(stored.agent_transcript).toEqual([{ speaker: 'agent', text: 'Goodbye.', start_ms: 0, end_ms: 900 }]);
    });
  });

  describe('Postgres down when a trigger arrives', () => {
    const postgres = new TcpProxy('127.0.0.1', 5432);
    let apps: TestApps;
    let org: TestOrganization;
    let uuid: string;

    beforeAll(async () => {
      const port = await postgres.start();
      const url = new URL(testRunResources().databaseUrl);
      url.port = String(port);
      apps = await startTestApps({ dialer: false, env: { DATABASE_URL: url.toString(), API_KEY_CACHE_TTL_MS: '0' } });
      org = await createOrganization(apps.dataSource);
      await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 20 } });
      uuid = (await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) })).triggerUuid;
    });
    afterAll(async () => {
      await postgres.restore();
      await apps.close();
      await postgres.stop();
    });

    it('answers 503 with the standard error body, stores nothing, and recovers when Postgres returns', async () => {
      const count = async () =>
        (await apps.dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE organization_id = $1`, [org.organizationId]))[0].n;
      const before = await count();
      await postgres.cut();
      const down = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      expect(down.status).toBe(503);
      expect(down.body).toEqual({
        statusCode: 503,
        code: 'service_unavailable',
        message: expect.any(String),
        request_id: down.headers.get('x-request-id'),
      });
      const ready = await apps.client.get('/health/ready');
      expect(ready.status).toBe(503);
      // Unauthenticated, on the public port: which dependency, not the driver's error (its host, port, user).
      expect(ready.body.details.details.postgres).toEqual({ status: 'down', message: 'postgres did not answer (the reason is in the log)' });
      expect(JSON.stringify(ready.body)).not.toMatch(/127\.0\.0\.1|ECONN|postgres@|:\d{4,5}\b/);

      await postgres.restore();
      const up = await waitFor(async () => {
        const response = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
        return response.status === 200 ? response : undefined;
      });
      expect(up.body.status).toBe('initiated');
      expect(await count()).toBe(before + 1);
    });
  });
});
