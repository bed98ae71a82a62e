import { randomUUID } from 'node:crypto';
import type { Pool, QueryResult } from 'pg';
import { DataSource } from 'typeorm';
import { DownloadTokens } from '@app/artifacts';
import { AppConfig } from '@app/config';
import { createDataSource, NewRun, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { RUN_RECORD_FIELDS } from '../../../../test/support/run-record-fields';
import { storedRunIds } from '../../../../test/support/stored-run-ids';
import { testRunResources } from '../../../../test/support/test-run-id';
import { RunPresenter } from './run-presenter.service';
import { RunRecords } from './run-records.service';

/** JSON whose text Postgres writes differently from JSON.stringify: numbers, escapes, key order, nesting. */
const AWKWARD_CONTEXT = {
  quote: 'say "hi", \\ then {stop}',
  unicode: 'ü 🎉 \u2028\u2029 \u00e9',
  control: '\u0001\t\n\r\u001f',
  numbers: [0, -1.5, 1e21, 1e-7, 0.1, 123456789012345, 5e-324, 1.7976931348623157e308],
  nested: { zz: { b: { c: [null, true, false, [], {}] } }, a: 1 },
  toString: 'a key named like a prototype member',
  'long key name that sorts after the short ones': 'x',
  '': 'the empty key',
};

/**
 * The record as a client read it when it was built from the whole run entity
 * (before records were written from their own read): the contract the JSON
 * text keeps. Links are compared as whether there is one.
 */
function entityRecord(run: WorkflowRun): Record<string, unknown> {
  const view = {
    id: run.id,
    workflow_id: run.workflowId,
    name: run.name,
    mode: run.provider ?? 'sandbox',
    created_at: run.createdAt.toISOString(),
    is_completed: run.isCompleted,
    transcript_url: Boolean(run.transcriptKey),
    recording_url: Boolean(run.recordingKey),
    cost_info: { call_duration_seconds: run.durationSeconds ?? 0, ...run.costInfo },
    definition_id: run.definitionId,
    call_type: run.callType,
    initial_context: run.initialContext,
    gathered_context: run.gatheredContext,
    logs: run.logs,
    annotations: run.annotations,
    status: run.status,
    environment: run.environment,
    phone_number: run.phoneNumber,
    from_number: run.fromNumber,
    telephony_configuration_id: run.telephonyConfigurationId,
    provider_call_id: run.providerCallId,
    duration_seconds: run.durationSeconds,
    answered_at: run.answeredAt?.toISOString() ?? null,
    ended_at: run.endedAt?.toISOString() ?? null,
    end_reason: run.endReason,
    trigger_uuid: run.triggerUuid,
    updated_at: run.updatedAt.toISOString(),
  };
  return JSON.parse(JSON.stringify(view)) as Record<string, unknown>;
}

/** A written record with its links as whether there is one, each checked to be a download link. */
function withLinksAsFlags(written: Record<string, unknown>): Record<string, unknown> {
  const flag = (url: unknown) => {
    if (url !== null) expect(url).toMatch(/^https:\/\/calls\.example\.com\/api\/v1\/downloads\/[^/]+\/[^/]+$/);
    return url !== null;
  };
  return { ...written, transcript_url: flag(written.transcript_url), recording_url: flag(written.recording_url) };
}

/** Against this test run's Postgres: a record written from its own read says what the run entity says. */
describe('RunRecords and RunPresenter.recordJson', () => {
  const ORG = 900_101;
  const WORKFLOW = 77_001;
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  let records: RunRecords;
  let presenter: RunPresenter;
  let tokens: DownloadTokens;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
    records = new RunRecords(dataSource);
    tokens = new DownloadTokens(Buffer.alloc(32, 3));
    presenter = new RunPresenter(tokens, { downloadUrlTtlSeconds: 3600, publicBaseUrl: 'https://calls.example.com' } as AppConfig);
    // The list reads a workflow's runs only once the workflow is found to be the organization's.
    await dataSource.query(`INSERT INTO workflows (id, organization_id, name) VALUES ($1, $2, 'Run records') ON CONFLICT (id) DO NOTHING`, [
      WORKFLOW,
      ORG,
    ]);
  });
  afterAll(() => dataSource?.destroy());

  /** Where this suite's runs are asked for. */
  const at = (runId: number, organizationId = ORG, workflowId = WORKFLOW) => ({ runId, organizationId, workflowId });

  const newRun = (initialContext: Record<string, unknown>): NewRun => ({
    organizationId: ORG,
    workflowId: WORKFLOW,
    environment: 'test',
    triggerUuid: randomUUID(),
    apiKeyId: 1,
    telephonyConfigurationId: 1,
    provider: 'sandbox',
    phoneNumber: '+14155550123',
    initialContext,
  });

  /** A queued run, a finished one with everything set, and one with empty artifact keys and odd values. */
  async function seedRuns(): Promise<number[]> {
    const [queued, finished, odd] = storedRunIds(await store.insertQueued([newRun({}), newRun(AWKWARD_CONTEXT), newRun({ a: [] })]));
    await dataSource.query(
      `UPDATE workflow_runs SET status = 'completed', is_completed = true, definition_id = 5, from_number = '+14155550100',
              provider_call_id = 'SB-1', duration_seconds = 12.25, end_reason = 'hangup',
              answered_at = '2026-11-25 10:00:00.123456+00', ended_at = '2026-12-31 23:59:59.999999+00',
              gathered_context = $2, annotations = $3, cost_info = $4, agent_transcript = $5,
              transcript_key = 'runs/x/t.json', recording_key = 'runs/x/r.wav',
              logs = jsonb_set(logs, '{template_missing_paths}', '["initial_context.user.name"]')
        WHERE id = $1`,
      [
        finished,
        JSON.stringify({ answered_by: 'human', turns: [{ who: 'agent', text: 'Hi "there"' }] }),
        JSON.stringify({ reviewed: true, score: 0.5 }),
        JSON.stringify({ total_cost: 0.0123, currency: 'USD', call_duration_seconds: 11 }),
        JSON.stringify([{ role: 'agent', text: 'not part of a record' }]),
      ],
    );
    await dataSource.query(
      `UPDATE workflow_runs SET status = 'failed', provider = NULL, transcript_key = '', recording_key = NULL,
              duration_seconds = 'NaN', trigger_uuid = NULL, call_type = 'inbound'
        WHERE id = $1`,
      [odd],
    );
    return [queued, finished, odd];
  }

  it('writes every field of the run entity as the record answered it, in RunView order', async () => {
    const ids = await seedRuns();
    const entities = new Map((await store.findManyById(ids)).map((run) => [run.id, run]));

    for (const id of ids) {
      const row = await records.findVisible(at(id));
      expect(row).not.toBeNull();
      const text = presenter.recordJson(row!);
      const written = JSON.parse(text) as Record<string, unknown>;
      expect(Object.keys(written)).toEqual(RUN_RECORD_FIELDS);
      expect(withLinksAsFlags(written)).toEqual(entityRecord(entities.get(id)!));
    }
  });

  it('keeps the awkward context exactly, and mints links only for artifacts that are stored', async () => {
    const [queued, finished, odd] = await seedRuns();
    const read = async (id: number) => JSON.parse(presenter.recordJson((await records.findVisible(at(id)))!));

    expect((await read(finished)).initial_context).toEqual(AWKWARD_CONTEXT);
    const links = await read(finished);
    const [payload, signature] = (links.recording_url as string).split('/').slice(-2);
    expect(tokens.verify(`${payload}.${signature}`)).toMatchObject({ ok: true, grant: { runId: finished, artifact: 'recording' } });
    expect(await read(queued)).toMatchObject({ transcript_url: null, recording_url: null, cost_info: { call_duration_seconds: 0 } });
    expect(await read(odd)).toMatchObject({ transcript_url: null, recording_url: null, mode: 'sandbox', duration_seconds: null });
  });

  it('answers null for an unknown run, and each of many concurrent reads its own run', async () => {
    const ids = await seedRuns();
    const reads = await Promise.all([...ids, 2_000_000_000, ...ids].map((id) => records.findVisible(at(id))));
    expect(reads.map((row) => row?.id ?? null)).toEqual([...ids, null, ...ids]);
  });

  it("answers null for a run asked for in another organization or workflow, even beside the owner's own read of it", async () => {
    const [queued, finished] = await seedRuns();
    const reads = await Promise.all([
      records.findVisible(at(finished, ORG + 1)),
      records.findVisible(at(finished)),
      records.findVisible(at(finished, ORG, WORKFLOW + 1)),
      records.findVisible(at(queued, ORG + 1, WORKFLOW + 1)),
      records.findVisible(at(queued)),
    ]);
    expect(reads.map((row) => row?.id ?? null)).toEqual([null, finished, null, null, queued]);

    // Asked for alone, another organization's run is not even read: Postgres answers no row, so none of its
    // documents are loaded for the 404.
    const pool = (dataSource.driver as unknown as { master: Pool }).master;
    const query = jest.spyOn(pool, 'query');
    try {
      expect(await records.findVisible(at(finished, ORG + 1))).toBeNull();
      expect(query).toHaveBeenCalledTimes(1);
      expect((await (query.mock.results[0].value as Promise<QueryResult>)).rows).toEqual([]);
    } finally {
      query.mockRestore();
    }
  });

  it('lists a workflow’s runs of one organization newest first, by status and before a cursor', async () => {
    const [queued, finished, odd] = await seedRuns();
    const all = await records.list({ workflowId: WORKFLOW, organizationId: ORG, limit: 200 });
    const listed = all.map((row) => row.id);
    expect(listed).toEqual([...listed].sort((a, b) => b - a));
    expect(listed).toEqual(expect.arrayContaining([queued, finished, odd]));

    const completed = await records.list({ workflowId: WORKFLOW, organizationId: ORG, status: 'completed', limit: 200 });
    expect(completed.every((row) => row.status === 'completed')).toBe(true);
    expect(completed.map((row) => row.id)).toContain(finished);

    const before = await records.list({ workflowId: WORKFLOW, organizationId: ORG, beforeId: odd, limit: 2 });
    expect(before.map((row) => row.id)).toEqual([finished, queued]);
    expect(await records.list({ workflowId: WORKFLOW, organizationId: ORG + 1, limit: 200 })).toEqual([]);

    const page = JSON.parse(presenter.pageJson(before, 'next').toString('utf8'));
    expect(page).toEqual({ runs: before.map((row) => JSON.parse(presenter.summaryJson(row))), next_cursor: 'next' });
    // A list item is the record without its free-form documents, which are not even read.
    const full = (await records.findVisible(at(finished)))!;
    const { initial_context, gathered_context, logs, annotations, ...summary } = JSON.parse(presenter.recordJson(full));
    // The documents a list item leaves out are the run's own (seeded, none of them empty): the record holds them.
    const stored = entityRecord((await store.findManyById([finished]))[0]);
    expect({ initial_context, gathered_context, logs, annotations }).toEqual({
      initial_context: stored.initial_context,
      gathered_context: stored.gathered_context,
      logs: stored.logs,
      annotations: stored.annotations,
    });
    expect(initial_context).toEqual(AWKWARD_CONTEXT);
    expect(page.runs[0]).toEqual(summary);
    expect(Object.keys(before[0])).not.toEqual(expect.arrayContaining(['gathered_context']));
  });
});
