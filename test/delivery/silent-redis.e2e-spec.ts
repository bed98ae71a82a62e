import { Redis } from 'ioredis';
import { placeCallJobId, QueueName } from '@app/queue';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { createIsolatedResources, IsolatedResources } from '../support/isolated-resources';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/**
 * Redis connections that go silent, closed by neither side (a failover that
 * moves the address, a partition, a host that loses power): no reset comes,
 * and the kernel would retransmit a command's packets for about 15 minutes
 * before it gave the connection up. Each app must give up a connection that
 * has not answered for REDIS_SOCKET_TIMEOUT_MS and connect again.
 */
describe('Redis connections that go silent', () => {
  /** The shortest REDIS_SOCKET_TIMEOUT_MS allowed: it must outlast BullMQ's longest blocking wait for a job (10 s). */
  const SOCKET_TIMEOUT_MS = 12_000;
  let own: IsolatedResources;
  let direct: Redis;

  beforeAll(async () => {
    own = await createIsolatedResources('silent_redis');
    direct = new Redis('redis://127.0.0.1:6379');
  });
  afterAll(async () => {
    direct.disconnect();
    await own.drop();
  });

  const jobExists = async (runId: number) =>
    (await direct.exists(`${own.env.QUEUE_PREFIX}:${QueueName.Calls}:${placeCallJobId(runId)}`)) === 1;

  async function seedOrganization(apps: TestApps): Promise<{ org: TestOrganization; uuid: string; workflowId: number }> {
    const org = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 20 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    return { org, uuid: workflow.triggerUuid, workflowId: workflow.workflowId };
  }

  it("the gateway enqueues dial jobs itself again once its silent connection is given up", async () => {
    const redis = new TcpProxy('127.0.0.1', 6379);
    const port = await redis.start();
    // No dialer: its dispatcher would enqueue the runs the gateway leaves, and hide whether the gateway recovered.
    const apps = await startTestApps({
      dialer: false,
      env: { ...own.env, REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_SOCKET_TIMEOUT_MS: String(SOCKET_TIMEOUT_MS) },
    });
    try {
      const { org, uuid } = await seedOrganization(apps);
      const trigger = async () => {
        const response = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
        expect(response.status).toBe(200);
        return response.body.workflow_run_id as number;
      };
      expect(await jobExists(await trigger())).toBe(true);
      const connectionsBefore = redis.accepted;

      redis.silenceOpenConnections();
      const started = Date.now();
      const unanswered = await trigger();
      // Answered within ENQUEUE_TIMEOUT_MS (500 ms) and the machine's slack, not after the silence.
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await jobExists(unanswered)).toBe(false);

      // Every trigger's enqueue waits for a connection that answers nothing until it is given up; then one is
      // sent at once. The wait's bound is the socket timeout, reconnection and a loaded machine's slack.
      const recovered = await waitFor(
        async () => {
          const runId = await trigger();
          return (await jobExists(runId)) ? runId : undefined;
        },
        { timeoutMs: SOCKET_TIMEOUT_MS + 8000, intervalMs: 500, what: "a trigger's dial job enqueued by the gateway after the silence" },
      );
      expect(recovered).toBeGreaterThan(unanswered);
      expect(Date.now() - started).toBeGreaterThanOrEqual(SOCKET_TIMEOUT_MS - 1000);
      expect(redis.accepted).toBeGreaterThan(connectionsBefore);
    } finally {
      await apps.close();
      await redis.stop();
    }
  }, 60_000);

  it('a dialer whose connections go silent takes and dials runs again once it has given them up', async () => {
    const redis = new TcpProxy('127.0.0.1', 6379);
    const port = await redis.start();
    // The gateway on Redis itself: only the dialer's connections go silent.
    const apps = await startTestApps({ dialer: false, env: { ...own.env, DISPATCH_INTERVAL_MS: '200' } });
    try {
      await apps.addDialer({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_SOCKET_TIMEOUT_MS: String(SOCKET_TIMEOUT_MS) });
      const { org, uuid, workflowId } = await seedOrganization(apps);
      const completed = async (runId: number, timeoutMs?: number) =>
        waitFor(
          async () => {
            const run = (await apps.client.get(`/api/v1/workflow/${workflowId}/runs/${runId}`, { key: org.adminKey })).body;
            return run.is_completed ? run : undefined;
          },
          { timeoutMs, what: `run ${runId} to complete` },
        );
      const trigger = async () => {
        const response = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
        expect(response.status).toBe(200);
        return response.body.workflow_run_id as number;
      };
      expect((await completed(await trigger())).status).toBe('completed');
      const connectionsBefore = redis.accepted;

      redis.silenceOpenConnections();
      const runId = await trigger();
      const run = await completed(runId, SOCKET_TIMEOUT_MS + 15_000);
      expect(run.status).toBe('completed');
      expect(redis.accepted).toBeGreaterThan(connectionsBefore);
      // Dialed once: a command the dialer gave up on may have run all the same, and its job must not be dialed twice.
      const [{ count }] = await apps.dataSource.query(`SELECT count(*)::int AS count FROM sandbox_calls WHERE run_id = $1`, [runId]);
      expect(count).toBe(1);
    } finally {
      await apps.close();
      await redis.stop();
    }
  }, 60_000);
});
