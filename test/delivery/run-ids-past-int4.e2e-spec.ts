import { sandboxDialsByRun } from '../support/fixtures';
import { createIsolatedResources, IsolatedResources } from '../support/isolated-resources';
import { CallableOrganization, runPath, seedCallableOrganization, startCall, waitForRun } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

/** 2^32: past int4's 2,147,483,647, where a `SERIAL` run id would have run out. */
const FIRST_ID_PAST_INT4 = 4_294_967_296;

/** A deployment that has drawn billions of run ids: every path a run id takes still works. */
describe('run ids past int4', () => {
  let apps: TestApps;
  let own: IsolatedResources;
  let callable: CallableOrganization;

  beforeAll(async () => {
    // Its own database: the sequence is moved, and other suites' runs must keep their ids.
    own = await createIsolatedResources('bigids');
    apps = await startTestApps({ env: own.env });
    await apps.dataSource.query(`SELECT setval(pg_get_serial_sequence('workflow_runs', 'id'), $1, false)`, [FIRST_ID_PAST_INT4]);
    callable = await seedCallableOrganization(apps.dataSource, { settings: { ring_ms: 0, talk_ms: 50 } });
  });
  afterAll(async () => {
    await apps?.close();
    await own?.drop();
  });

  const key = () => callable.org.adminKey;
  const listRuns = (query: string) => apps.client.get(`/api/v1/workflow/${callable.workflow.workflowId}/runs?${query}`, { key: key() });

  it('triggers, dials once and reads back a run whose id is past int4, with its recording', async () => {
    const runId = await startCall(apps.client, callable.workflow.triggerUuid, { phone_number: '+14155550100', initial_context: { name: 'Ada' } }, { key: key() });

    expect(runId).toBe(FIRST_ID_PAST_INT4);
    const run = await waitForRun(apps.client, key(), callable.workflow.workflowId, runId);
    expect(run).toMatchObject({ id: runId, name: `WR-API-${runId}`, status: 'completed', is_completed: true, initial_context: { name: 'Ada' } });
    expect(await sandboxDialsByRun(apps.dataSource, [runId])).toEqual(new Map([[runId, 1]]));
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer()).subarray(0, 4).toString('ascii')).toBe('RIFF');
  });

  it('pages the run list with cursors past int4', async () => {
    const ids = [];
    for (let index = 0; index < 3; index++) {
      ids.push(await startCall(apps.client, callable.workflow.triggerUuid, { phone_number: `+1415555011${index}` }, { key: key() }));
    }
    const pages = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `limit=2&cursor=${cursor}` : 'limit=2';
      const response = await listRuns(query);
      expect(response.status).toBe(200);
      pages.push(response.body.runs.map((run: { id: number }) => run.id));
      cursor = response.body.next_cursor;
    } while (cursor);

    expect(pages.flat().slice(0, 3)).toEqual([...ids].reverse());
    expect(pages.flat().every((id) => id >= FIRST_ID_PAST_INT4)).toBe(true);
  });

  it('answers a repeat of an Idempotency-Key with its run past int4', async () => {
    const body = { phone_number: '+14155550120' };
    const headers = { 'idempotency-key': 'big-ids-1' };
    const first = await apps.client.post(`/api/v1/public/agent/${callable.workflow.triggerUuid}`, body, { key: key(), headers });
    const repeat = await apps.client.post(`/api/v1/public/agent/${callable.workflow.triggerUuid}`, body, { key: key(), headers });

    expect(first.status).toBe(200);
    expect(first.body.workflow_run_id).toBeGreaterThanOrEqual(FIRST_ID_PAST_INT4);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
  });

  it('cancels a run past int4', async () => {
    // Ten seconds of ringing: the cancel hangs the call up through the carrier.
    const ringing = await seedCallableOrganization(apps.dataSource, { name: 'Ringing', settings: { ring_ms: 10_000, talk_ms: 0 } });
    const runId = await startCall(apps.client, ringing.workflow.triggerUuid, { phone_number: '+14155550130' }, { key: ringing.org.adminKey });
    await waitForRun(apps.client, ringing.org.adminKey, ringing.workflow.workflowId, runId, (run) => run.status === 'ringing');
    const canceled = await apps.client.post(`${runPath(ringing.workflow.workflowId, runId)}/cancel`, undefined, { key: ringing.org.adminKey });

    expect(canceled.status).toBe(202);
    const run = await waitForRun(apps.client, ringing.org.adminKey, ringing.workflow.workflowId, runId);
    expect(run).toMatchObject({ id: runId, status: 'canceled' });
  });

  it('triggers, reads and pages runs of sixteen digits, the most a number holds exactly', async () => {
    await apps.dataSource.query(`SELECT setval(pg_get_serial_sequence('workflow_runs', 'id'), $1, false)`, [Number.MAX_SAFE_INTEGER - 2]);
    const ids = [];
    for (let index = 0; index < 3; index++) {
      ids.push(await startCall(apps.client, callable.workflow.triggerUuid, { phone_number: `+1415555014${index}` }, { key: key() }));
    }

    expect(ids).toEqual([Number.MAX_SAFE_INTEGER - 2, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER]);
    const run = await waitForRun(apps.client, key(), callable.workflow.workflowId, ids[2]);
    expect(run).toMatchObject({ id: ids[2], name: `WR-API-${ids[2]}`, is_completed: true });
    const first = await listRuns('limit=1');
    expect(first.body.runs.map((listed: { id: number }) => listed.id)).toEqual([ids[2]]);
    const second = await listRuns(`limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.runs.map((listed: { id: number }) => listed.id)).toEqual([ids[1], ids[0]]);
    // The sequence stops there: a trigger past it fails instead of storing a run whose id would read as another's.
    const refused = await apps.client.post(`/api/v1/public/agent/${callable.workflow.triggerUuid}`, { phone_number: '+14155550150' }, { key: key() });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 500, code: 'internal_error' });
    expect(await apps.dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE id > $1`, [Number.MAX_SAFE_INTEGER])).toEqual([{ n: 0 }]);
  });
});
