import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiTrigger, DefinitionGraph, SandboxCall, TelephonyConfiguration, Workflow, WorkflowDefinition, WorkflowRun } from '@app/persistence';
import { bootstrapOrganization } from '../../apps/api/src/organizations/bootstrap-organization';

export interface TestOrganization {
  organizationId: number;
  adminKey: string;
}

export async function createOrganization(dataSource: DataSource, name = 'Test org'): Promise<TestOrganization> {
  const created = await bootstrapOrganization(dataSource, `${name} ${randomUUID().slice(0, 8)}`);
  return { organizationId: created.organization_id, adminKey: created.api_key };
}

/** A start → agent → end graph with an API trigger node. */
export function agentGraph(triggerUuid: string, prompts: { start?: string; greeting?: string; agent?: string } = {}): DefinitionGraph {
  return {
    nodes: [
      { id: 'trigger', type: 'trigger', data: { trigger_path: triggerUuid } },
      {
        id: 'start',
        type: 'startCall',
        data: { prompt: prompts.start ?? 'You are a friendly assistant.', ...(prompts.greeting ? { greeting: prompts.greeting } : {}) },
      },
      { id: 'agent', type: 'agentNode', data: { prompt: prompts.agent ?? 'Help the caller.' } },
      { id: 'end', type: 'endCall', data: {} },
    ],
    edges: [
      { source: 'trigger', target: 'start' },
      { source: 'start', target: 'agent' },
      { source: 'agent', target: 'end' },
    ],
  };
}

export interface SeededWorkflow {
  workflowId: number;
  triggerUuid: string;
  draftId: number | null;
  publishedId: number | null;
}

/** Seeds a workflow straight into the database, with an active trigger and the given versions. */
export async function seedWorkflow(
  dataSource: DataSource,
  organizationId: number,
  versions: { published?: (uuid: string) => DefinitionGraph; draft?: (uuid: string) => DefinitionGraph },
): Promise<SeededWorkflow> {
  const triggerUuid = randomUUID();
  return dataSource.transaction(async (manager) => {
    const workflow = await manager.getRepository(Workflow).save({ organizationId, name: 'Seeded agent' });
    await manager.getRepository(ApiTrigger).save({ uuid: triggerUuid, organizationId, workflowId: workflow.id, isActive: true });
    const definitions = manager.getRepository(WorkflowDefinition);
    let version = 0;
    const save = async (status: 'published' | 'draft', graph?: (uuid: string) => DefinitionGraph) =>
      graph
        ? (
            await definitions.save({
              workflowId: workflow.id,
              version: ++version,
              status,
              definition: graph(triggerUuid),
              publishedAt: status === 'published' ? new Date() : null,
            })
          ).id
        : null;
    const publishedId = await save('published', versions.published);
    const draftId = await save('draft', versions.draft);
    return { workflowId: workflow.id, triggerUuid, draftId, publishedId };
  });
}

/** Seeds a sandbox telephony configuration, the default by default. */
export async function seedSandboxConfiguration(
  dataSource: DataSource,
  organizationId: number,
  options: Partial<
    Pick<
      TelephonyConfiguration,
      'fromNumbers' | 'isDefaultOutbound' | 'settings' | 'name' | 'callsPerSecond' | 'maxConcurrentCalls' | 'maxCallDurationSeconds'
    >
  > = {},
): Promise<TelephonyConfiguration> {
  return dataSource.getRepository(TelephonyConfiguration).save({
    organizationId,
    name: options.name ?? 'Sandbox',
    provider: 'sandbox',
    credentialsEncrypted: null,
    fromNumbers: options.fromNumbers ?? ['+15005550006'],
    isDefaultOutbound: options.isDefaultOutbound ?? true,
    callsPerSecond: options.callsPerSecond ?? 100,
    maxConcurrentCalls: options.maxConcurrentCalls ?? 100,
    maxCallDurationSeconds: options.maxCallDurationSeconds ?? 3600,
    settings: options.settings ?? { ring_ms: 30, talk_ms: 200 },
  });
}

/** How many times the sandbox carrier was asked to place a call for each run. */
export async function sandboxDialsByRun(dataSource: DataSource, runIds: number[]): Promise<Map<number, number>> {
  const rows: Array<{ run_id: number; dials: number }> = await dataSource.query(
    `SELECT run_id, count(*)::int AS dials FROM sandbox_calls WHERE run_id = ANY($1) GROUP BY run_id`,
    [runIds],
  );
  return new Map(runIds.map((id) => [id, rows.find((row) => row.run_id === id)?.dials ?? 0]));
}

/** Polls the database until every run is final and complete. */
export async function runsWhenComplete(dataSource: DataSource, runIds: number[], timeoutMs = 30000) {
  const { waitFor } = await import('./wait-for');
  return waitFor(
    async () => {
      const rows: Array<{ id: number; status: string; is_completed: boolean; end_reason: string | null; logs: any }> =
        await dataSource.query(`SELECT id, status, is_completed, end_reason, logs FROM workflow_runs WHERE id = ANY($1)`, [runIds]);
      return rows.length === runIds.length && rows.every((row) => row.is_completed) ? rows : undefined;
    },
    { timeoutMs, what: `${runIds.length} runs to complete` },
  );
}

/** A run as a dialer leaves it when it dies between sending the dial and hearing back: `dialing`, no carrier call id. */
export async function seedStrandedDialingRun(
  dataSource: DataSource,
  options: {
    organizationId: number;
    workflow: SeededWorkflow;
    telephonyConfigurationId: number;
    provider: string;
    to: string;
    from: string;
    dialedSecondsAgo: number;
  },
): Promise<number> {
  const seed: StrandedRunSeed = {
    organizationId: options.organizationId,
    workflowId: options.workflow.workflowId,
    triggerUuid: options.workflow.triggerUuid,
    configId: options.telephonyConfigurationId,
    definitionId: options.workflow.publishedId,
  };
  return strandedRun(dataSource, seed, 'dialing', null, undefined, `${options.dialedSecondsAgo} seconds`, {
    provider: options.provider,
    to: options.to,
    from: options.from,
  });
}

/** What a stranded run belongs to: its organization, workflow and trigger, sandbox configuration and definition. */
export interface StrandedRunSeed {
  organizationId: number;
  workflowId: number;
  triggerUuid: string;
  configId: number;
  definitionId: number | null;
}

/** An organization with a sandbox configuration (ring 20 ms, talk 50 ms) and a published agent, for stranded runs. */
export async function seedForStrandedRuns(dataSource: DataSource, maxCallDurationSeconds?: number): Promise<StrandedRunSeed> {
  const org = await createOrganization(dataSource);
  const config = await seedSandboxConfiguration(dataSource, org.organizationId, {
    settings: { ring_ms: 20, talk_ms: 50 },
    maxCallDurationSeconds,
  });
  const workflow = await seedWorkflow(dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
  return {
    organizationId: org.organizationId,
    workflowId: workflow.workflowId,
    triggerUuid: workflow.triggerUuid,
    configId: config.id,
    definitionId: workflow.publishedId,
  };
}

/**
 * A run as a dialer would leave it when it died in the middle of its work
 * (a sandbox call unless `call` says otherwise). `beforeStale` sets up whatever else that moment left behind (a carrier's
 * record of the call) while the run is still fresh, so the reaper, which
 * polls every 200 ms, cannot look at the run before the scene is complete.
 */
export async function strandedRun(
  dataSource: DataSource,
  seed: StrandedRunSeed,
  status: 'dialing' | 'ringing' | 'in_progress' | 'completed',
  providerCallId: string | null,
  beforeStale: (runId: number) => Promise<unknown> = async () => undefined,
  stoppedAgo = '10 minutes',
  call: { provider: string; to: string; from: string } = { provider: 'sandbox', to: '+14155550100', from: '+15005550006' },
): Promise<number> {
  const run = await dataSource.getRepository(WorkflowRun).save({
    organizationId: seed.organizationId,
    workflowId: seed.workflowId,
    name: 'pending',
    status,
    environment: 'production',
    triggerUuid: seed.triggerUuid,
    telephonyConfigurationId: seed.configId,
    provider: call.provider,
    definitionId: seed.definitionId,
    phoneNumber: call.to,
    fromNumber: call.from,
    providerCallId,
    logs: { events: [] },
  });
  await beforeStale(run.id);
  await dataSource.query(
    `UPDATE workflow_runs SET name = 'WR-API-' || id, status_changed_at = now() - $2::interval WHERE id = $1`,
    [run.id, stoppedAgo],
  );
  return run.id;
}

/**
 * A sandbox call placed 5 s ago that rings for a minute, though no event
 * reached its run, which knows its id (`callId`): a run whose events were lost.
 */
export async function stillRinging(dataSource: DataSource, runId: number, callId: string): Promise<void> {
  await dataSource.getRepository(SandboxCall).save({
    callId,
    runId,
    toNumber: '+14155550100',
    outcome: 'no_answer',
    ringMs: 60_000,
    talkMs: 0,
    canceledAt: null,
    createdAt: new Date(Date.now() - 5000),
  });
  await dataSource.query(`UPDATE workflow_runs SET provider_call_id = $2 WHERE id = $1`, [runId, callId]);
}
