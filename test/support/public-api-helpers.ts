import { request as httpRequest } from 'node:http';
import { DataSource } from 'typeorm';
import { ApiKey, ApiKeyRole, DefinitionGraph, TelephonyConfiguration } from '@app/persistence';
import { issueApiKey } from '../../apps/api/src/auth/api-key-secret';
import { ApiClient, ApiResponse, RequestOptions } from './api-client';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, SeededWorkflow, TestOrganization } from './fixtures';
import { waitFor } from './wait-for';

export { seededRandom } from './seeded-random';

/** Keys an error body may carry: the four of the contract, plus `details` on validation errors. */
const ERROR_BODY_KEYS = ['statusCode', 'code', 'message', 'request_id', 'details'];

export const FINAL_STATUSES = ['completed', 'busy', 'no_answer', 'failed', 'canceled'];

/**
 * Asserts the one error body of the API: `{statusCode, code, message,
 * request_id}`, JSON, with the request id the `X-Request-Id` header carries.
 */
export function expectError(response: ApiResponse, status: number, code: string): void {
  const summary = `${response.status} ${response.text.slice(0, 300)}`;
  expect({ status: response.status, code: response.body?.code, summary }).toEqual({ status, code, summary });
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.body).toEqual(
    expect.objectContaining({
      statusCode: status,
      code,
      message: expect.any(String),
      request_id: expect.any(String),
    }),
  );
  expect(response.body.message.length).toBeGreaterThan(0);
  expect(response.body.request_id.length).toBeGreaterThan(0);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
  for (const key of Object.keys(response.body)) expect(ERROR_BODY_KEYS).toContain(key);
}

/** Inserts an API key row the way the management API does: only its hash is stored. */
export async function issueKey(
  dataSource: DataSource,
  organizationId: number,
  options: { role?: ApiKeyRole; workflowIds?: number[] | null; name?: string } = {},
): Promise<{ id: number; key: string }> {
  const issued = issueApiKey();
  const row = await dataSource.getRepository(ApiKey).save({
    organizationId,
    name: options.name ?? 'test key',
    role: options.role ?? 'trigger',
    keyHash: issued.hash,
    keyPrefix: issued.displayPrefix,
    workflowIds: options.workflowIds === undefined ? null : options.workflowIds,
    revokedAt: null,
  });
  return { id: row.id, key: issued.key };
}

export async function countRuns(dataSource: DataSource, organizationId: number): Promise<number> {
  const [row] = await dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE organization_id = $1`, [
    organizationId,
  ]);
  return row.n;
}

export function triggerPath(uuid: string, environment: 'production' | 'test' = 'production'): string {
  return environment === 'test' ? `/api/v1/public/agent/test/${uuid}` : `/api/v1/public/agent/${uuid}`;
}

export function runPath(workflowId: number | string, runId: number | string): string {
  return `/api/v1/workflow/${workflowId}/runs/${runId}`;
}

/** Triggers a call and asserts it was accepted; answers the run id. */
export async function startCall(
  client: ApiClient,
  uuid: string,
  body: Record<string, unknown>,
  options: RequestOptions & { environment?: 'production' | 'test' } = {},
): Promise<number> {
  const response = await client.post(triggerPath(uuid, options.environment), body, options);
  if (response.status !== 200) throw new Error(`trigger answered ${response.status}: ${response.text}`);
  return response.body.workflow_run_id;
}

/**
 * Polls the run record until `done` accepts it. `observe` sees every record
 * read on the way, so a test can assert invariants of intermediate states.
 */
export async function waitForRun(
  client: ApiClient,
  key: string,
  workflowId: number,
  runId: number,
  done: (run: any) => boolean = (run) => run.is_completed === true,
  observe: (run: any) => void = () => undefined,
): Promise<any> {
  return waitFor(
    async () => {
      const response = await client.get(runPath(workflowId, runId), { key });
      if (response.status !== 200) throw new Error(`run read answered ${response.status}: ${response.text}`);
      observe(response.body);
      return done(response.body) ? response.body : undefined;
    },
    { what: `run ${runId} to reach the expected state`, intervalMs: 25 },
  );
}

export interface CallableOrganization {
  org: TestOrganization;
  workflow: SeededWorkflow;
  config: TelephonyConfiguration;
}

/** An organization that can place calls: a sandbox default configuration and a published agent. */
export async function seedCallableOrganization(
  dataSource: DataSource,
  options: {
    name?: string;
    graph?: (uuid: string) => DefinitionGraph;
    settings?: Record<string, unknown>;
  } = {},
): Promise<CallableOrganization> {
  const org = await createOrganization(dataSource, options.name);
  const config = await seedSandboxConfiguration(dataSource, org.organizationId, options.settings ? { settings: options.settings } : {});
  const workflow = await seedWorkflow(dataSource, org.organizationId, { published: options.graph ?? ((uuid) => agentGraph(uuid)) });
  return { org, workflow, config };
}

/** The two parts of a download URL's signed token: `/api/v1/downloads/<payload>/<signature>`. */
export function downloadToken(url: string): { payload: string; signature: string } {
  const [payload, signature] = new URL(url).pathname.split('/').slice(-2);
  return { payload, signature };
}

/** Replaces the character at `index` with a different base64url character. */
export function flipChar(text: string, index: number): string {
  const current = text[index];
  const replacement = current === 'A' ? 'B' : 'A';
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

/**
 * A POST that announces a 2 MiB body and sends only its head and a few bytes
 * of it: answers the status and body the server sends while the rest is
 * still due (rejects if none comes within 5 s).
 */
export function headOnlyPost(baseUrl: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${baseUrl}${path}`, { method: 'POST', headers: { ...headers, 'content-length': String(2 * 1024 * 1024) } });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error('no answer while the body was still due'));
    }, 5_000);
    request.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        clearTimeout(timer);
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body });
      });
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.write('{"a": 1');
  });
}
