import { LoopbackHttpFake } from '../fakes/loopback-http-fake';
import { agentGraph, createOrganization, seedStrandedDialingRun, seedWorkflow, SeededWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** The number every carrier test dials, and the one it dials from. */
export const CALLEE = '+14155550100';
export const FROM = '+15005550006';

/** The turns every carrier test's agent reports: the greeting and the callee's answer. */
export const AGENT_TURNS = [
  { speaker: 'agent', text: 'Hello Ada!', start_ms: 0, end_ms: 900 },
  { speaker: 'user', text: 'Hi, who is this?', start_ms: 1200, end_ms: 2100 },
];

/** Our webhook URLs for one run, spelled out as the carrier must be told them. */
export interface RunCallbacks {
  answerUrl: string;
  statusUrl: string;
  recordingUrl: string;
}

export interface CarrierHarness<Call> {
  readonly apps: TestApps;
  readonly org: TestOrganization;
  readonly workflow: SeededWorkflow;
  /** Creates a telephony configuration through the management API (the fake's credentials unless given). */
  createConfiguration(settings: Record<string, unknown>, credentials?: Record<string, unknown>): Promise<number>;
  /** Triggers the workflow through the public API; answers the run id. */
  trigger(configId: number, to?: string): Promise<number>;
  runPath(runId: number): string;
  readRun(runId: number): Promise<any>;
  runReaches(runId: number, done: (run: any) => boolean, what: string): Promise<any>;
  /** The call the fake placed for a run, once the dialer has asked for it. */
  callFor(runId: number): Promise<Call>;
  /** `/api/v1/telephony/{provider}/{answer|status|recording}/{run_id}` under the API's base URL. */
  callbacks(runId: number): RunCallbacks;
  /**
   * Plays the agent runtime on an answered call: reads the session the token
   * opens (it must name the run, the agent's opening and the call), reports
   * `AGENT_TURNS` as the transcript, and ends the session.
   */
  playAgent(runId: number, token: string, providerCallId: string): Promise<void>;
  /** A run left in `dialing` by a dialer that died after dialing `to` (from `FROM`) through a configuration; answers its id. */
  strandedDialingRun(configId: number, to: string, dialedSecondsAgo: number): Promise<number>;
  /**
   * Makes an answered run's call older than its maximum duration (60 s here)
   * plus the reaper's grace, as if the carrier had let it talk on, and waits
   * for the reaper to end the run and log its hang-up of the call.
   */
  reapedPastItsLimit(runId: number): Promise<any>;
}

/** The names of a run's log events, in order. */
export function eventsOf(run: any): string[] {
  return run.logs.events.map((event: { event: string }) => event.event);
}

/**
 * What every carrier's end-to-end test starts from, registered as the
 * describe block's first hooks: the fake started, the apps pointed at it
 * through `apiUrlEnv`, an organization and a published workflow; all
 * stopped afterwards.
 */
export function useCarrierHarness<Call>(options: {
  fake: LoopbackHttpFake;
  provider: string;
  name: string;
  apiUrlEnv: string;
  /** The fake's call for a run, if it placed one yet. */
  findCall: (runId: number) => Call | undefined;
  /** More environment for the apps. */
  env?: Record<string, string>;
}): CarrierHarness<Call> {
  const { fake, provider, name, apiUrlEnv, findCall } = options;
  let apps: TestApps;
  let org: TestOrganization;
  let workflow: SeededWorkflow;

  beforeAll(async () => {
    await fake.start();
    apps = await startTestApps({ env: { [apiUrlEnv]: fake.url, ...options.env } });
    org = await createOrganization(apps.dataSource, `${name} customer`);
    workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: 'Hello {{ initial_context.name }}!' }),
    });
  });
  afterAll(async () => {
    await apps?.close();
    await fake.stop();
  });

  const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
  const readRun = async (runId: number) => (await apps.client.get(runPath(runId), { key: org.adminKey })).body;

  return {
    get apps() {
      return apps;
    },
    get org() {
      return org;
    },
    get workflow() {
      return workflow;
    },
    async createConfiguration(settings, credentials = fake.credentials) {
      const response = await apps.client.post(
        '/api/v1/telephony-configurations',
        { name: `${name} ${JSON.stringify(settings)}`, provider, credentials, from_numbers: [FROM], settings },
        { key: org.adminKey },
      );
      if (response.status !== 201) throw new Error(`creating the configuration answered ${response.status}: ${response.text}`);
      return response.body.id;
    },
    async trigger(configId, to = CALLEE) {
      const response = await apps.client.post(
        `/api/v1/public/agent/${workflow.triggerUuid}`,
        { phone_number: to, initial_context: { name: 'Ada' }, telephony_configuration_id: configId },
        { key: org.adminKey },
      );
      if (response.status !== 200) throw new Error(`trigger answered ${response.status}: ${response.text}`);
      return response.body.workflow_run_id;
    },
    runPath,
    readRun,
    runReaches: (runId, done, what) =>
      waitFor(async () => {
        const run = await readRun(runId);
        return done(run) ? run : undefined;
      }, { what, timeoutMs: 12000 }),
    callFor: (runId) => waitFor(async () => findCall(runId), { what: `${name} to be asked to dial run ${runId}` }),
    callbacks(runId) {
      const base = `${apps.baseUrl}/api/v1/telephony/${provider}`;
      return { answerUrl: `${base}/answer/${runId}`, statusUrl: `${base}/status/${runId}`, recordingUrl: `${base}/recording/${runId}` };
    },
    async playAgent(runId, token, providerCallId) {
      const session = `/api/v1/agent-sessions/${encodeURIComponent(token)}`;
      const agent = await apps.client.get(session);
      expect(agent.status).toBe(200);
      expect(agent.body).toMatchObject({
        run_id: runId,
        agent: { opening: 'Hello Ada!' },
        call: { to: CALLEE, from: FROM, provider, provider_call_id: providerCallId },
        initial_context: { name: 'Ada' },
      });
      const reported = await apps.client.post(`${session}/events`, {
        events: [...AGENT_TURNS.map((turn) => ({ type: 'transcript', ...turn })), { type: 'session_ended' }],
      });
      expect(reported.status).toBe(200);
    },
    async reapedPastItsLimit(runId) {
      const [, backdated] = await apps.dataSource.query(
        `UPDATE workflow_runs SET max_call_duration_seconds = 60, status_changed_at = now() - interval '150 seconds'
          WHERE id = $1 AND status = 'in_progress'`,
        [runId],
      );
      if (backdated !== 1) throw new Error(`run ${runId} is not in_progress`);
      return waitFor(async () => {
        const run = await readRun(runId);
        return run.status === 'failed' && eventsOf(run).includes('reaper.hung_up') ? run : undefined;
      }, { what: `the reaper to end run ${runId} and hang its call up`, timeoutMs: 20_000 });
    },
    strandedDialingRun: (configId, to, dialedSecondsAgo) =>
      seedStrandedDialingRun(apps.dataSource, {
        organizationId: org.organizationId,
        workflow,
        telephonyConfigurationId: configId,
        provider,
        to,
        from: FROM,
        dialedSecondsAgo,
      }),
  };
}
