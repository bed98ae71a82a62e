import { agentGraph, seedWorkflow } from '../support/fixtures';
import {
  CallableOrganization,
  expectError,
  FINAL_STATUSES,
  issueKey,
  seededRandom,
  seedCallableOrganization,
  startCall,
  waitForRun,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const ANSWERED = '+14155552671';
const BUSY = '+14155550001';
/** Three answered calls and four busy ones, interleaved. */
const PHONES = [ANSWERED, BUSY, ANSWERED, BUSY, BUSY, ANSWERED, BUSY];

describe('run list: GET /api/v1/workflow/{workflow_id}/runs', () => {
  let apps: TestApps;
  let main: CallableOrganization;
  let other: CallableOrganization;
  let runIds: number[];

  beforeAll(async () => {
    apps = await startTestApps();
    [main, other] = await Promise.all([
      seedCallableOrganization(apps.dataSource, { name: 'Run list' }),
      seedCallableOrganization(apps.dataSource, { name: 'Run list other' }),
    ]);
    // One at a time, so the ids are in the order of the calls.
    runIds = [];
    for (const phone of PHONES) {
      runIds.push(await startCall(apps.client, main.workflow.triggerUuid, { phone_number: phone }, { key: main.org.adminKey }));
    }
    await startCall(apps.client, other.workflow.triggerUuid, { phone_number: ANSWERED }, { key: other.org.adminKey });
    await Promise.all(runIds.map((id) => waitForRun(apps.client, main.org.adminKey, main.workflow.workflowId, id)));
  });
  afterAll(() => apps.close());

  const listPath = (query = '', workflowId: number | string = main.workflow.workflowId) =>
    `/api/v1/workflow/${workflowId}/runs${query ? `?${query}` : ''}`;
  const list = (query = '', key = main.org.adminKey) => apps.client.get(listPath(query), { key });

  /** Follows next_cursor to the end; answers every page. */
  async function allPages(query: string, key = main.org.adminKey): Promise<any[][]> {
    const pages: any[][] = [];
    let cursor: string | null = null;
    do {
      const response = await list([query, cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&'), key);
      expect(response.status).toBe(200);
      pages.push(response.body.runs);
      cursor = response.body.next_cursor;
      expect(pages.length).toBeLessThan(20);
    } while (cursor);
    return pages;
  }

  it('lists the workflow’s runs newest first, as run records without their free-form documents, with next_cursor null on the last page', async () => {
    const response = await list();
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ runs: expect.any(Array), next_cursor: null });
    expect(response.body.runs.map((run: any) => run.id)).toEqual([...runIds].reverse());
    const created = response.body.runs.map((run: any) => Date.parse(run.created_at));
    expect(created).toEqual([...created].sort((a, b) => b - a));
    const single = await apps.client.get(`/api/v1/workflow/${main.workflow.workflowId}/runs/${runIds[0]}`, { key: main.org.adminKey });
    const { initial_context, gathered_context, logs, annotations, ...summary } = single.body;
    // The run's own free-form documents, as stored (the run is complete: none of them changes any more).
    const [stored] = await apps.dataSource.query(`SELECT initial_context, gathered_context, logs, annotations FROM workflow_runs WHERE id = $1`, [
      runIds[0],
    ]);
    expect({ initial_context, gathered_context, logs, annotations }).toEqual(stored);
    expect(logs.events.length).toBeGreaterThan(0);
    expect(response.body.runs.at(-1)).toEqual(summary);
    for (const run of response.body.runs) expect(Object.keys(run)).toEqual(Object.keys(summary));
  });

  it('answers a page of runs holding megabytes of gathered context in a few KiB: one request cannot fill the gateway', async () => {
    // An agent runtime may store up to 8 MiB per run; a page of 200 full records was up to 1.6 GB.
    const blob = 'x'.repeat(2 * 1024 * 1024);
    await apps.dataSource.query(`UPDATE workflow_runs SET gathered_context = jsonb_build_object('notes', $2::text) WHERE id = ANY($1::bigint[])`, [
      runIds,
      blob,
    ]);
    const response = await list('limit=200');
    expect(response.status).toBe(200);
    expect(response.body.runs.map((run: any) => run.id)).toEqual([...runIds].reverse());
    expect(JSON.stringify(response.body).length).toBeLessThan(64 * 1024);
    // The run itself still answers all of it.
    const single = await apps.client.get(`/api/v1/workflow/${main.workflow.workflowId}/runs/${runIds[0]}`, { key: main.org.adminKey });
    expect(single.body.gathered_context.notes).toHaveLength(blob.length);
  });

  it.each([1, 2, 3, 7])('paginates with limit=%d across pages without duplicates or gaps', async (limit) => {
    const pages = await allPages(`limit=${limit}`);
    for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
    expect(pages.at(-1)!.length).toBeGreaterThan(0);
    expect(pages.flat().map((run) => run.id)).toEqual([...runIds].reverse());
  });

  it('keeps paging consistent when a new run arrives between pages: no duplicate, no gap', async () => {
    const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await startCall(apps.client, workflow.triggerUuid, { phone_number: BUSY }, { key: main.org.adminKey }));
    }
    const page = (query: string) => apps.client.get(listPath(query, workflow.workflowId), { key: main.org.adminKey });
    const first = await page('limit=2');
    const newcomer = await startCall(apps.client, workflow.triggerUuid, { phone_number: BUSY }, { key: main.org.adminKey });
    const second = await page(`limit=2&cursor=${first.body.next_cursor}`);
    const third = await page(`limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body.next_cursor).toBeNull();
    expect([first, second, third].flatMap((response) => response.body.runs.map((run: any) => run.id))).toEqual([...ids].reverse());
    expect((await page('limit=1')).body.runs[0].id).toBe(newcomer);
  });

  it('filters by status, newest first, paginated within the filter', async () => {
    const busy = runIds.filter((_, index) => PHONES[index] === BUSY).reverse();
    const completed = runIds.filter((_, index) => PHONES[index] === ANSWERED).reverse();
    expect((await allPages('status=busy&limit=3')).flat().map((run) => run.id)).toEqual(busy);
    expect((await allPages('status=completed&limit=2')).flat().map((run) => run.id)).toEqual(completed);
    for (const run of (await list('status=busy')).body.runs) expect(run.status).toBe('busy');
    expect((await list('status=queued')).body).toEqual({ runs: [], next_cursor: null });
  });

  it.each(['0', '201', '-1', '1.5', 'abc', '', '0x10', '1e2', '5.0', '%205', '+5'])('answers 400 for limit=%s', async (limit) => {
    expectError(await list(`limit=${limit}`), 400, 'validation_failed');
  });

  it('accepts limit=200, the largest page', async () => {
    const response = await list('limit=200');
    expect(response.status).toBe(200);
    expect(response.body.runs).toHaveLength(PHONES.length);
  });

  it.each(['bogus', 'COMPLETED', ''])('answers 400 for status=%s', async (status) => {
    expectError(await list(`status=${status}`), 400, 'validation_failed');
  });

  it('answers 400 for a repeated status parameter', async () => {
    expectError(await list('status=busy&status=completed'), 400, 'validation_failed');
  });

  it('answers 400 for an unknown query parameter', async () => {
    expectError(await list('page=2'), 400, 'validation_failed');
  });

  it.each([
    ['not base64url', '!!!'],
    ['not an id', Buffer.from('abc').toString('base64url')],
    ['a negative id', Buffer.from('-5').toString('base64url')],
    ['a fraction', Buffer.from('1.5').toString('base64url')],
    ['an id past the ids a number holds exactly', Buffer.from('9007199254740992').toString('base64url')],
    ['a huge id', Buffer.from('9'.repeat(29)).toString('base64url')],
    ['too long', 'A'.repeat(41)],
  ])('answers 400 for a cursor that is %s', async (_, cursor) => {
    expectError(await list(`cursor=${encodeURIComponent(cursor)}`), 400, 'validation_failed');
  });

  it('answers only 4xx or 200 to 300 seeded random query strings, never 5xx', async () => {
    const random = seededRandom(0x11575);
    const atoms = ['limit', 'status', 'cursor', 'x', 'limit[]', 'status[0]', '__proto__', 'constructor', ''];
    const values = ['', '0', '1', '200', '201', '-1', 'busy', 'queued', 'MQ', 'OTk5OTk5OTk5OTk', '%00', '%FF', '[]', '{}', 'a'.repeat(50), '1e999', 'NaN'];
    const queries = Array.from({ length: 300 }, () =>
      Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
        const name = atoms[Math.floor(random() * atoms.length)];
        const value = values[Math.floor(random() * values.length)];
        return `${name}=${value}`;
      }).join('&'),
    );
    for (let start = 0; start < queries.length; start += 30) {
      const responses = await Promise.all(queries.slice(start, start + 30).map((query) => list(query)));
      responses.forEach((response, index) => {
        const label = `?${queries[start + index]} → ${response.status} ${response.text.slice(0, 160)}`;
        expect({ label, ok: response.status === 200 || (response.status >= 400 && response.status < 500) }).toEqual({ label, ok: true });
      });
    }
  });

  describe('access', () => {
    it('answers 401 without credentials', async () => {
      expectError(await apps.client.get(listPath()), 401, 'unauthorized');
    });

    it('answers a trigger key allowed for the workflow, and 403 to one that is not', async () => {
      const allowed = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId] });
      const denied = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [other.workflow.workflowId] });
      expect((await list('', allowed.key)).body.runs).toHaveLength(PHONES.length);
      expectError(await list('', denied.key), 403, 'forbidden');
    });

    it('answers 404 workflow_not_found, never another organization’s runs, for another organization’s workflow', async () => {
      expectError(await apps.client.get(listPath('', other.workflow.workflowId), { key: main.org.adminKey }), 404, 'workflow_not_found');
      const forged = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [other.workflow.workflowId] });
      expectError(await apps.client.get(listPath('', other.workflow.workflowId), { key: forged.key }), 404, 'workflow_not_found');
      for (const status of FINAL_STATUSES) {
        const filtered = await apps.client.get(listPath(`status=${status}`, other.workflow.workflowId), { key: main.org.adminKey });
        expectError(filtered, 404, 'workflow_not_found');
      }
    });

    it("reads none of another organization's runs to answer that 404: its workflow's size does not show in the time", async () => {
      const ran: Array<{ sql: string; values: unknown[] }> = [];
      const query = apps.dataSource.query.bind(apps.dataSource);
      const spy = jest.spyOn(apps.dataSource, 'query').mockImplementation(async (sql, values) => {
        if (sql.includes('FROM workflow_runs') && sql.includes('ORDER BY id DESC')) ran.push({ sql, values: (values as unknown[]) ?? [] });
        return query(sql, values);
      });
      try {
        expectError(await apps.client.get(listPath('', other.workflow.workflowId), { key: main.org.adminKey }), 404, 'workflow_not_found');
      } finally {
        spy.mockRestore();
      }
      expect(ran).toHaveLength(1);
      const [{ 'QUERY PLAN': [plan] }] = await apps.dataSource.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${ran[0].sql}`, ran[0].values);
      /** Every node of the plan that reads `workflow_runs`, and how often it ran. */
      const scans: Array<{ loops: number; rows: number }> = [];
      const walk = (node: Record<string, any>) => {
        if (node['Relation Name'] === 'workflow_runs') scans.push({ loops: node['Actual Loops'], rows: node['Actual Rows'] });
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(plan.Plan);
      expect(scans.length).toBeGreaterThan(0);
      // The organization's ownership of the workflow is asked first, once, and the runs' scan never starts.
      expect(scans.every((scan) => scan.loops === 0)).toBe(true);
      // As it would for the owner: the other organization's own run is there to be read.
      const own = await apps.client.get(listPath('', other.workflow.workflowId), { key: other.org.adminKey });
      expect(own.body.runs).toHaveLength(1);
    });

    it('answers 404 workflow_not_found for an unknown workflow id, in the int range or past it, and 400 for a malformed one', async () => {
      expectError(await apps.client.get(listPath('', 2147483647), { key: main.org.adminKey }), 404, 'workflow_not_found');
      expectError(await apps.client.get(listPath('', 'abc'), { key: main.org.adminKey }), 400, 'validation_failed');
      expectError(await apps.client.get(listPath('', '2147483648'), { key: main.org.adminKey }), 404, 'workflow_not_found');
    });

    it('answers an empty list for a workflow of the organization with no runs (of that status, or past the cursor)', async () => {
      const idle = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
      expect((await apps.client.get(listPath('', idle.workflowId), { key: main.org.adminKey })).body).toEqual({ runs: [], next_cursor: null });
      const none = await apps.client.get(listPath('status=canceled', main.workflow.workflowId), { key: main.org.adminKey });
      expect(none.status).toBe(200);
      expect(none.body).toEqual({ runs: [], next_cursor: null });
      const pastTheOldest = Buffer.from(String(runIds[0])).toString('base64url');
      expect((await list(`cursor=${pastTheOldest}`)).body).toEqual({ runs: [], next_cursor: null });
    });
  });
});
