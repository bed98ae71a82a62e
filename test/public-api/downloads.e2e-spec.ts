import { ReadStream } from 'node:fs';
import { ARTIFACT_STORAGE, ArtifactStorage } from '@app/artifacts';
import { TelephonyConfiguration } from '@app/persistence';
import { seedSandboxConfiguration } from '../support/fixtures';
import {
  CallableOrganization,
  downloadToken,
  expectError,
  flipChar,
  issueKey,
  runPath,
  seedCallableOrganization,
  startCall,
  waitForRun,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

const ANSWERED = '+14155552671';
const BUSY = '+14155550001';

async function fetchBare(url: string) {
  const response = await fetch(url);
  const body = Buffer.from(await response.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, body: json, bytes: body, text: body.toString('utf8') };
}

function secondsFromNow(isoDate: string): number {
  return (Date.parse(isoDate) - Date.now()) / 1000;
}

describe('downloads: run artifact URLs and time-limited links', () => {
  let apps: TestApps;
  let main: CallableOrganization;
  let other: CallableOrganization;
  let longCall: TelephonyConfiguration;
  let completed: any;
  let busy: any;
  let inProgressId: number;

  beforeAll(async () => {
    apps = await startTestApps();
    [main, other] = await Promise.all([
      seedCallableOrganization(apps.dataSource, { name: 'Downloads' }),
      seedCallableOrganization(apps.dataSource, { name: 'Downloads other' }),
    ]);
    // A call that stays in progress for the whole file: its artifacts do not exist yet.
    longCall = await seedSandboxConfiguration(apps.dataSource, main.org.organizationId, {
      name: 'Long calls',
      isDefaultOutbound: false,
      settings: { ring_ms: 10, talk_ms: 120_000 },
    });
    const key = { key: main.org.adminKey };
    const [completedId, busyId, longId] = await Promise.all([
      startCall(apps.client, main.workflow.triggerUuid, { phone_number: ANSWERED }, key),
      startCall(apps.client, main.workflow.triggerUuid, { phone_number: BUSY }, key),
      startCall(apps.client, main.workflow.triggerUuid, { phone_number: ANSWERED, telephony_configuration_id: longCall.id }, key),
    ]);
    inProgressId = longId;
    [completed, busy] = await Promise.all([
      waitForRun(apps.client, main.org.adminKey, main.workflow.workflowId, completedId),
      waitForRun(apps.client, main.org.adminKey, main.workflow.workflowId, busyId),
      waitForRun(apps.client, main.org.adminKey, main.workflow.workflowId, longId, (run) => run.status === 'in_progress'),
    ]);
  });
  afterAll(() => apps.close());

  /** A copy of the completed run under `id`, with its artifacts' keys, or with `keys` instead. */
  const copyOfCompleted = (id: number, keys?: { transcript: string; recording: string }) =>
    apps.dataSource.query(
      `INSERT INTO workflow_runs (id, name, status, organization_id, workflow_id, environment, trigger_uuid, api_key_id,
                                  telephony_configuration_id, provider, phone_number, is_completed, transcript_key, recording_key)
       SELECT $2::bigint, 'WR-API-' || $2::text, status, organization_id, workflow_id, environment, trigger_uuid, api_key_id,
              telephony_configuration_id, provider, phone_number, is_completed,
              COALESCE($3, transcript_key), COALESCE($4, recording_key)
         FROM workflow_runs WHERE id = $1`,
      [completed.id, id, keys?.transcript ?? null, keys?.recording ?? null],
    );
  const downloadsPath = (runId: number, workflowId = main.workflow.workflowId) => `${runPath(workflowId, runId)}/downloads`;
  const mint = (runId: number, body: unknown, key = main.org.adminKey, workflowId = main.workflow.workflowId) =>
    apps.client.post(downloadsPath(runId, workflowId), body, { key });

  describe('URLs on the run record', () => {
    it('answers a null transcript_url while the call is in progress (the transcript is stored when the call ends)', async () => {
      const run = await apps.client.get(runPath(main.workflow.workflowId, inProgressId), { key: main.org.adminKey });
      expect(run.body).toEqual(expect.objectContaining({ status: 'in_progress', is_completed: false, transcript_url: null }));
    });

    it('answers null URLs for a call that never connected', () => {
      expect(busy).toEqual(expect.objectContaining({ status: 'busy', transcript_url: null, recording_url: null }));
    });

    it('answers absolute URLs under PUBLIC_BASE_URL once the artifacts are stored', () => {
      expect(completed.transcript_url.startsWith(`${apps.config.publicBaseUrl}/api/v1/downloads/`)).toBe(true);
      expect(completed.recording_url.startsWith(`${apps.config.publicBaseUrl}/api/v1/downloads/`)).toBe(true);
      expect(new URL(completed.transcript_url).protocol).toBe('http:');
    });

    it('serves the transcript and the recording to anyone holding the URL, without any header', async () => {
      const [transcript, recording] = await Promise.all([fetchBare(completed.transcript_url), fetchBare(completed.recording_url)]);
      expect(transcript.status).toBe(200);
      expect(transcript.headers.get('content-type')).toMatch(/^application\/json/);
      expect(transcript.headers.get('content-disposition')).toBe(`attachment; filename="${completed.name}-transcript.json"`);
      expect(transcript.body).toEqual({ run_id: completed.id, turns: expect.any(Array) });
      expect(recording.status).toBe(200);
      expect(recording.headers.get('content-type')).toBe('audio/wav');
      expect(recording.headers.get('content-disposition')).toBe(`attachment; filename="${completed.name}-recording.wav"`);
      expect(recording.bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
      expect(Number(recording.headers.get('content-length'))).toBe(recording.bytes.length);
    });

    it("answers HEAD with the GET's headers and no body, without reading the file", async () => {
      const storage = apps.api.get<ArtifactStorage>(ARTIFACT_STORAGE);
      const get = storage.get.bind(storage);
      const opened: Array<{ read?: ReadStream; closed: boolean }> = [];
      const spy = jest.spyOn(storage, 'get').mockImplementation(async (key) => {
        const stored = await get(key);
        if (!stored) return stored;
        const seen: { read?: ReadStream; closed: boolean } = { closed: false };
        opened.push(seen);
        return {
          ...stored,
          read: (range) => (seen.read = stored.read(range) as ReadStream),
          close: () => ((seen.closed = true), stored.close()),
        };
      });
      try {
        const head = await fetch(completed.recording_url, { method: 'HEAD' });
        const got = await fetchBare(completed.recording_url);
        expect(head.status).toBe(200);
        expect((await head.arrayBuffer()).byteLength).toBe(0);
        for (const name of ['content-type', 'content-length', 'content-disposition', 'cache-control', 'accept-ranges', 'etag']) {
          expect({ name, value: head.headers.get(name) }).toEqual({ name, value: got.headers.get(name) });
        }
        // The HEAD's file was closed unread; the GET's was read whole.
        expect(opened).toHaveLength(2);
        expect(opened[0]).toEqual({ closed: true });
        await waitFor(async () => (opened[1].read?.bytesRead === got.bytes.length ? true : undefined), { what: 'the GET to be read' });
        await waitFor(async () => (opened[1].read?.closed ? true : undefined), { what: "the GET's file to be closed" });
      } finally {
        spy.mockRestore();
      }
    });

    it('answers one range of bytes in part (206), so a player can seek and a download resume', async () => {
      const whole = await fetchBare(completed.recording_url);
      const size = whole.bytes.length;
      expect(size).toBeGreaterThan(100);
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      const etag = whole.headers.get('etag')!;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);

      const ranged = async (range: string, extra: Record<string, string> = {}) => {
        const response = await fetch(completed.recording_url, { headers: { range, ...extra } });
        return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
      };
      for (const [range, start, end] of [
        ['bytes=0-99', 0, 99],
        ['bytes=100-', 100, size - 1],
        ['bytes=-44', size - 44, size - 1],
        [`bytes=${size - 10}-${size + 1000}`, size - 10, size - 1],
      ] as const) {
        const part = await ranged(range);
        expect({ range, status: part.status }).toEqual({ range, status: 206 });
        expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
        expect(Number(part.headers.get('content-length'))).toBe(end - start + 1);
        expect(part.bytes.equals(whole.bytes.subarray(start, end + 1))).toBe(true);
      }
      // Resumed against this very copy, in part; against another, whole.
      expect((await ranged('bytes=10-19', { 'if-range': etag })).status).toBe(206);
      const stale = await ranged('bytes=10-19', { 'if-range': '"another-copy"' });
      expect(stale.status).toBe(200);
      expect(stale.bytes.equals(whole.bytes)).toBe(true);
      // Several ranges at once are answered whole.
      expect((await ranged('bytes=0-1,5-6')).status).toBe(200);

      // A HEAD answers as a GET without Range would: range handling is defined for GET alone.
      const head = await fetch(completed.recording_url, { method: 'HEAD', headers: { range: `bytes=${size}-` } });
      expect({ status: head.status, length: head.headers.get('content-length') }).toEqual({ status: 200, length: String(size) });

      const past = await fetch(completed.recording_url, { headers: { range: `bytes=${size}-` } });
      expect(past.status).toBe(416);
      expect(past.headers.get('content-range')).toBe(`bytes */${size}`);
      expect(await past.json()).toMatchObject({ statusCode: 416, code: 'range_not_satisfiable' });
    });

    it('answers 304 to a client that holds this copy (If-None-Match), and 412 to an If-Match naming another', async () => {
      const whole = await fetchBare(completed.recording_url);
      const etag = whole.headers.get('etag')!;
      const conditional = async (headers: Record<string, string>, method = 'GET') => {
        const response = await fetch(completed.recording_url, { method, headers });
        return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
      };
      for (const ifNoneMatch of [etag, `W/${etag}`, `"another-copy", ${etag}`, '*']) {
        for (const method of ['GET', 'HEAD']) {
          const kept = await conditional({ 'if-none-match': ifNoneMatch }, method);
          expect({ ifNoneMatch, method, status: kept.status, bytes: kept.bytes.length }).toEqual({ ifNoneMatch, method, status: 304, bytes: 0 });
          expect(kept.headers.get('etag')).toBe(etag);
        }
      }
      // Another copy, or a Range alongside a tag that does not match: served as before.
      expect((await conditional({ 'if-none-match': '"another-copy"' })).bytes.equals(whole.bytes)).toBe(true);
      expect((await conditional({ 'if-none-match': '"another-copy"', range: 'bytes=0-9' })).status).toBe(206);

      expect((await conditional({ 'if-match': etag })).status).toBe(200);
      expect((await conditional({ 'if-match': '*' })).status).toBe(200);
      for (const ifMatch of ['"another-copy"', `W/${etag}`]) {
        const refused = await conditional({ 'if-match': ifMatch });
        expect({ ifMatch, status: refused.status }).toEqual({ ifMatch, status: 412 });
        expect(JSON.parse(refused.bytes.toString())).toMatchObject({ statusCode: 412, code: 'precondition_failed' });
      }
    });

    it('answers 404 artifact_not_found once the pack holding an artifact is gone (retention removed its day)', async () => {
      const goneId = 6_000_000_000 + completed.id;
      await copyOfCompleted(goneId, {
        transcript: 'packs/2020-01-01/removed-1.pack@0+10/runs/0/1-transcript.json',
        recording: 'runs/no-such-folder/1-recording.wav',
      });
      for (const artifact of ['transcript', 'recording']) {
        const minted = await mint(goneId, { artifact });
        expect(minted.status).toBe(200);
        const response = await fetchBare(minted.body.url);
        expect({ artifact, status: response.status, code: response.body?.code }).toEqual({ artifact, status: 404, code: 'artifact_not_found' });
      }
    });

    it('serves both artifacts of a run whose id has ten digits, past int4 (a token longer than one 100-character path segment)', async () => {
      const bigId = 5_000_000_000 + completed.id;
      await copyOfCompleted(bigId);
      const run = await apps.client.get(runPath(main.workflow.workflowId, bigId), { key: main.org.adminKey });
      expect(run.status).toBe(200);
      const minted = await mint(bigId, { artifact: 'transcript', expires_in_seconds: 7 * 24 * 3600 });
      expect(minted.status).toBe(200);
      for (const url of [run.body.transcript_url, run.body.recording_url, minted.body.url]) {
        const response = await fetchBare(url);
        expect({ url, status: response.status }).toEqual({ url, status: 200 });
      }
    });

    it('makes the run’s URLs valid for one hour by default (rounded up to the next whole minute)', () => {
      for (const url of [completed.transcript_url, completed.recording_url]) {
        const { payload } = downloadToken(url);
        const grant = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
        const lifetime = grant.e - Date.parse(completed.updated_at) / 1000;
        expect(lifetime).toBeGreaterThan(3600 - 120);
        // A record's links expire on a one-minute step at the default TTL, so polls within it answer one URL.
        expect(grant.e % 60).toBe(0);
        expect(grant.e - Date.now() / 1000).toBeLessThanOrEqual(3600 + 60 + 1);
      }
    });
  });

  describe('POST /api/v1/workflow/{workflow_id}/runs/{run_id}/downloads', () => {
    it.each(['transcript', 'recording'])('mints a %s link {url, expires_at} with the chosen lifetime, fetchable without headers', async (artifact) => {
      const response = await mint(completed.id, { artifact, expires_in_seconds: 120 });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ url: expect.any(String), expires_at: expect.any(String) });
      expect(response.body.url.startsWith(`${apps.config.publicBaseUrl}/api/v1/downloads/`)).toBe(true);
      expect(secondsFromNow(response.body.expires_at)).toBeGreaterThan(117);
      expect(secondsFromNow(response.body.expires_at)).toBeLessThanOrEqual(121);
      const [minted, fromRun] = await Promise.all([
        fetchBare(response.body.url),
        fetchBare(artifact === 'recording' ? completed.recording_url : completed.transcript_url),
      ]);
      expect(minted.status).toBe(200);
      expect(minted.bytes.equals(fromRun.bytes)).toBe(true);
    });

    it.each([
      ['omitted', { artifact: 'recording' }],
      ['null', { artifact: 'recording', expires_in_seconds: null }],
    ])('mints a one-hour link when expires_in_seconds is %s', async (_case, body) => {
      const response = await mint(completed.id, body);
      expect(response.status).toBe(200);
      expect(secondsFromNow(response.body.expires_at)).toBeGreaterThan(3600 - 5);
      expect(secondsFromNow(response.body.expires_at)).toBeLessThanOrEqual(3601);
      expect((await fetchBare(response.body.url)).status).toBe(200);
    });

    it('accepts a Bearer key and a trigger key allowed for the workflow', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId] });
      expect((await apps.client.post(downloadsPath(completed.id), { artifact: 'transcript' }, { key, bearer: true })).status).toBe(200);
    });

    it.each([
      ['an unknown artifact', { artifact: 'video' }],
      ['a missing artifact', { expires_in_seconds: 60 }],
      ['a lifetime of 0', { artifact: 'recording', expires_in_seconds: 0 }],
      ['a negative lifetime', { artifact: 'recording', expires_in_seconds: -5 }],
      ['a lifetime over 7 days', { artifact: 'recording', expires_in_seconds: 7 * 24 * 3600 + 1 }],
      ['a fractional lifetime', { artifact: 'recording', expires_in_seconds: 1.5 }],
      ['a lifetime as a string', { artifact: 'recording', expires_in_seconds: '60' }],
      ['an unknown field', { artifact: 'recording', public: true }],
    ])('answers 400 for %s', async (_, body) => {
      expectError(await mint(completed.id, body), 400, 'validation_failed');
    });

    it('answers 404 artifact_not_available while the transcript is not stored yet', async () => {
      expectError(await mint(inProgressId, { artifact: 'transcript' }), 404, 'artifact_not_available');
    });

    it('answers 404 artifact_not_available for a call that never connected', async () => {
      expectError(await mint(busy.id, { artifact: 'transcript' }), 404, 'artifact_not_available');
    });

    it('answers 401 without credentials', async () => {
      expectError(await apps.client.post(downloadsPath(completed.id), { artifact: 'recording' }), 401, 'unauthorized');
    });

    it('answers 403 to a trigger key not allowed for the workflow', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [other.workflow.workflowId] });
      expectError(await mint(completed.id, { artifact: 'recording' }, key), 403, 'forbidden');
    });

    it('answers 404 for a run of another organization, and under another workflow id', async () => {
      expectError(await mint(completed.id, { artifact: 'recording' }, other.org.adminKey), 404, 'run_not_found');
      expectError(
        await mint(completed.id, { artifact: 'recording' }, other.org.adminKey, other.workflow.workflowId),
        404,
        'run_not_found',
      );
      expectError(await mint(completed.id, { artifact: 'recording' }, main.org.adminKey, other.workflow.workflowId), 404, 'run_not_found');
    });
  });

  describe('link expiry and tampering', () => {
    it('answers 410 download_expired once a link minted with expires_in_seconds 1 lapses', async () => {
      const response = await mint(completed.id, { artifact: 'transcript', expires_in_seconds: 1 });
      expect(response.status).toBe(200);
      const waitMs = Date.parse(response.body.expires_at) - Date.now() + 50;
      expect(waitMs).toBeLessThanOrEqual(1050);
      // The one fixed sleep of the suite: expiry is a matter of wall-clock time.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, waitMs)));
      const expired = await apps.client.get(response.body.url);
      expectError(expired, 410, 'download_expired');
    });

    it('answers 403 download_token_invalid for a token whose payload or signature was altered', async () => {
      const { payload, signature } = downloadToken(completed.recording_url);
      const base = `${apps.config.publicBaseUrl}/api/v1/downloads/`;
      const other = downloadToken(completed.transcript_url);
      const forgedGrant = { ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), e: 4102444800 };
      const tampered = [
        `${flipChar(payload, 3)}/${signature}`,
        `${flipChar(payload, payload.length - 1)}/${signature}`,
        `${payload}/${flipChar(signature, 0)}`,
        `${payload}/${flipChar(signature, signature.length - 2)}`,
        `${payload}/${signature.slice(0, -1)}`,
        `${payload}/${signature}x`,
        `${other.payload}/${signature}`,
        `${Buffer.from(JSON.stringify(forgedGrant)).toString('base64url')}/${signature}`,
        // The one-segment form `<payload>.<signature>`, tampered the same ways.
        `${flipChar(payload, 3)}.${signature}`,
        `${payload}.${flipChar(signature, 5)}`,
        `${payload}.`,
        payload,
        'not-a-token',
        `${payload}.${signature}.x`,
      ];
      for (const token of tampered) {
        const response = await apps.client.get(`${base}${token}`);
        // A one-segment token grows with the run id: past the router's 100 characters it is refused before it is read.
        const [status, code] = token.split('/').some((segment) => segment.length > 100) ? [414, 'uri_too_long'] : [403, 'download_token_invalid'];
        expect({ token, status: response.status }).toEqual({ token, status });
        expectError(response, status, code);
      }
      expect((await fetchBare(`${base}${payload}/${signature}`)).status).toBe(200);
    });
  });
});
