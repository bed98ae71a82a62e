import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { connect, Socket } from 'node:net';
import { ARTIFACT_STORAGE, ArtifactStorage, artifactKey } from '@app/artifacts';
import { AgentSessionTokens, SandboxProvider, SandboxSignature, TelephonyProviders } from '@app/telephony';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { RecordingUploads } from '../../apps/api/src/agent-sessions/recording-uploads';
import { RunArtifactsCollector } from '../../apps/dialer/src/call-events/run-artifacts-collector.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';

describe('the agent-session contract with the voice-agent runtime', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let tokens: AgentSessionTokens;
  let workflowId: number;
  let longCallConfigId: number;
  let trigger: (configId: number, context?: Record<string, unknown>) => Promise<number>;
  /**
   * Says 'admitted', with the upload's X-Request-Id, for each upload the gateway admits on its head
   * (RecordingUploads.admit returned): it then waits for the body.
   */
  const admissions = new EventEmitter();

  beforeAll(async () => {
    apps = await startTestApps();
    tokens = new AgentSessionTokens(apps.config.secretsKey);
    const uploads = apps.api.get(RecordingUploads);
    const admit = uploads.admit.bind(uploads);
    uploads.admit = (...args) => {
      admit(...args);
      admissions.emit('admitted', args[1].headers['x-request-id']);
    };
    org = await createOrganization(apps.dataSource);
    // The built-in agent asks for its session once the call is answered; a call that ends before it has asked
    // rightly completes without its reports. 1.5 s of talk leaves it time on a machine busy with other tests.
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 1500 } });
    longCallConfigId = (
      await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 8000, builtin_agent: false }, isDefaultOutbound: false })
    ).id;
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: 'Hi {{ initial_context.name }}!', agent: 'Book {{ initial_context.slot }}.' }),
    });
    workflowId = workflow.workflowId;
    trigger = async (configId = 0, context = { name: 'Ada', slot: 'Monday' }) =>
      (
        await apps.client.post(
          `/api/v1/public/agent/${workflow.triggerUuid}`,
          { phone_number: '+14155550100', initial_context: context, ...(configId ? { telephony_configuration_id: configId } : {}) },
          { key: org.adminKey },
        )
      ).body.workflow_run_id;
  });
  afterAll(() => apps.close());

  const run = (id: number) => apps.client.get(`/api/v1/workflow/${workflowId}/runs/${id}`, { key: org.adminKey });
  const session = (token: string) => `/api/v1/agent-sessions/${encodeURIComponent(token)}`;
  const tokenFor = (runId: number, lifetime = 600) => tokens.sign({ runId, expiresAt: Math.floor(Date.now() / 1000) + lifetime });

  /** A connection that has sent a recording upload's head announcing `bytes` and the first kilobyte (`first`), and holds the rest. */
  const startUpload = (path: string, contentType: string, bytes: number, headers: Record<string, string> = {}, first = Buffer.alloc(1024)) => {
    const { hostname, port } = new URL(apps.client.baseUrl);
    const socket = connect(Number(port), hostname);
    const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`PUT ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: ${contentType}\r\nContent-Length: ${bytes}\r\n${extra}\r\n`);
    socket.write(first);
    return socket;
  };

  /**
   * The admission of an upload to be sent with `X-Request-Id: id`: resolves
   * once the gateway has admitted it, rejects after 15 s; `cancel` stops
   * waiting (the upload was answered).
   */
  const nextAdmission = () => {
    const id = randomUUID();
    let cancel!: (error?: Error) => void;
    const admitted = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => cancel(new Error('the upload was neither admitted nor answered within 15 s')), 15_000);
      const onAdmitted = (admittedId: unknown) => {
        if (admittedId !== id) return;
        cancel();
        resolve();
      };
      admissions.on('admitted', onAdmitted);
      cancel = (error?: Error) => {
        clearTimeout(timer);
        admissions.off('admitted', onAdmitted);
        if (error) reject(error);
      };
    });
    return { id, admitted, cancel: () => cancel() };
  };

  /** An upload the API admitted and waits for the body of: its connection. Fails if it was answered instead. */
  const heldUpload = (path: string, contentType: string, bytes: number) =>
    new Promise<Socket>((resolve, reject) => {
      const admission = nextAdmission();
      const socket = startUpload(path, contentType, bytes, { 'X-Request-Id': admission.id });
      socket.on('error', reject);
      socket.once('data', (chunk) => {
        admission.cancel();
        socket.destroy();
        reject(new Error(`the upload to hold was answered: ${chunk.toString('latin1').split('\r\n')[0]}`));
      });
      admission.admitted.then(
        () => resolve(socket),
        (error: unknown) => {
          socket.destroy();
          reject(error);
        },
      );
    });

  /**
   * The status, error code and Retry-After (when it has one) of the whole answer in `received` (bytes as latin1), or
   * undefined until all of it came.
   */
  const answerIn = (received: string): { status: number; code: string; retryAfter?: string } | undefined => {
    const headEnd = received.indexOf('\r\n\r\n');
    const length = /\r\ncontent-length: *(\d+)/i.exec(received);
    if (headEnd < 0 || !length || received.length < headEnd + 4 + Number(length[1])) return undefined;
    const retryAfter = /\r\nretry-after: *([^\r]*)/i.exec(received.slice(0, headEnd))?.[1];
    return { status: Number(received.split(' ')[1]), code: JSON.parse(received.slice(headEnd + 4)).code, ...(retryAfter ? { retryAfter } : {}) };
  };

  /**
   * Sends a recording upload's head announcing 50 MiB of audio (or `bytes`)
   * and only the first kilobyte of it: the API's answer, or 'admitted' once
   * the gateway admitted it and waits for the rest.
   */
  const uploadHead = (path: string, contentType: string, bytes = 50 * 1024 * 1024, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; code: string; retryAfter?: string } | 'admitted'>((resolve, reject) => {
      const admission = nextAdmission();
      const socket = startUpload(path, contentType, bytes, { ...headers, 'X-Request-Id': admission.id });
      let received = '';
      let done = false;
      const finish = (outcome: { status: number; code: string; retryAfter?: string } | 'admitted') => {
        if (done) return;
        done = true;
        socket.destroy();
        resolve(outcome);
      };
      socket.on('error', reject);
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        const answer = answerIn(received);
        if (answer) {
          admission.cancel();
          finish(answer);
        }
      });
      admission.admitted.then(
        () => finish('admitted'),
        (error: unknown) => {
          socket.destroy();
          reject(error);
        },
      );
    });

  it('is what every sandbox call goes through: the agent reports the transcript, context, usage and recording', async () => {
    const runId = await trigger(0);
    const completed = await waitFor(async () => ((await run(runId)).body.is_completed ? (await run(runId)).body : undefined));
    expect(completed.status).toBe('completed');
    expect(completed.gathered_context).toEqual({ conversation: 'sandbox' });
    expect(completed.cost_info.usage).toEqual({ agent_turns: 2 });
    const events = completed.logs.events.map((event: { event: string }) => event.event);
    expect(events).not.toContain('carrier.answer_handling_failed');
    const transcript = await apps.client.get(completed.transcript_url);
    expect(transcript.body.turns[0]).toMatchObject({ speaker: 'agent', text: 'Hi Ada!' });
    expect((await fetch(completed.recording_url)).headers.get('content-type')).toBe('audio/wav');
  });

  it("takes the agent's report of an opening longer than a turn may be, said up to that length", async () => {
    // The greeting, 'Hi {{ initial_context.name }}!', rendered to 12,004 characters.
    const runId = await trigger(0, { name: 'x'.repeat(12_000), slot: 'Monday' });
    const completed = await waitFor(async () => ((await run(runId)).body.is_completed ? (await run(runId)).body : undefined));
    expect(completed.status).toBe('completed');
    const events = completed.logs.events.map((event: { event: string }) => event.event);
    expect(events).not.toContain('carrier.answer_handling_failed');
    // Reported by the agent (its context and usage are there), not the dialer's own transcript after the wait.
    expect(completed.gathered_context).toEqual({ conversation: 'sandbox' });
    const transcript = await apps.client.get(completed.transcript_url);
    expect(transcript.body.turns[0]).toMatchObject({ speaker: 'agent', text: `Hi ${'x'.repeat(9_997)}` });
  });

  describe('during a call', () => {
    let runId: number;

    beforeAll(async () => {
      runId = await trigger(longCallConfigId, { name: 'Grace', slot: 'Friday', nested: { deep: [1, 2] } });
      await waitFor(async () => ((await run(runId)).body.status === 'in_progress' ? true : undefined));
    });

    it('gives the runtime the rendered agent, the definition, the call and the initial_context', async () => {
      const response = await apps.client.get(session(tokenFor(runId)));
      expect(response.status).toBe(200);
      const current = (await run(runId)).body;
      expect(response.body).toEqual({
        run_id: runId,
        workflow_id: workflowId,
        definition_id: current.definition_id,
        agent: {
          opening: 'Hi Grace!',
          nodes: expect.arrayContaining([
            { id: 'start', type: 'startCall', prompt: 'You are a friendly assistant.', greeting: 'Hi Grace!' },
            { id: 'agent', type: 'agentNode', prompt: 'Book Friday.', greeting: null },
          ]),
        },
        call: { direction: 'outbound', to: '+14155550100', from: current.from_number, provider: 'sandbox', provider_call_id: current.provider_call_id },
        initial_context: { name: 'Grace', slot: 'Friday', nested: { deep: [1, 2] } },
      });
    });

    it('marks the session started on its first read, and writes nothing to the run on a read once it is marked', async () => {
      const fresh = await trigger(longCallConfigId);
      await waitFor(async () => ((await run(fresh)).body.status === 'in_progress' ? true : undefined));
      const marks = async () =>
        (await apps.dataSource.query(`SELECT agent_session_started_at, updated_at FROM workflow_runs WHERE id = $1`, [fresh]))[0];
      expect((await marks()).agent_session_started_at).toBeNull();

      expect((await apps.client.get(session(tokenFor(fresh)))).status).toBe(200);
      const first = await marks();
      expect(first.agent_session_started_at).not.toBeNull();
      expect((await apps.client.get(session(tokenFor(fresh)))).status).toBe(200);
      expect(await marks()).toEqual(first);
    });

    it('answers 503 agent_render_failed within the render budget when the agent is too costly to render, not minutes later', async () => {
      // A definition stored before the save-time check: the gateway renders it under one budget, as the dialer does.
      const [{ definition_id: definitionId, definition }] = await apps.dataSource.query(
        `SELECT r.definition_id, d.definition FROM workflow_runs r JOIN workflow_definitions d ON d.id = r.definition_id WHERE r.id = $1`,
        [runId],
      );
      const loop = '{% for i in (1..1000) %}{% for j in (1..1000) %}{% endfor %}{% endfor %}';
      const costly = { ...definition, nodes: [...definition.nodes, ...[1, 2, 3].map((i) => ({ id: `slow${i}`, type: 'agentNode', data: { prompt: loop } }))] };
      await apps.dataSource.query(`UPDATE workflow_definitions SET definition = $2 WHERE id = $1`, [definitionId, costly]);
      try {
        const started = Date.now();
        const response = await apps.client.get(session(tokenFor(runId)));
        expect(response.status).toBe(503);
        expect(response.body).toMatchObject({ code: 'agent_render_failed', message: expect.stringContaining('too costly to render') });
        expect(Date.now() - started).toBeLessThan(5_000);
      } finally {
        await apps.dataSource.query(`UPDATE workflow_definitions SET definition = $2 WHERE id = $1`, [definitionId, definition]);
      }
      expect((await apps.client.get(session(tokenFor(runId)))).status).toBe(200);
    });

    it('answers 403 for a tampered token and 410 for an expired one', async () => {
      const token = tokenFor(runId);
      const tampered = `${token.slice(0, -2)}${token.endsWith('A') ? 'B' : 'A'}A`;
      expect((await apps.client.get(session(tampered))).body.code).toBe('session_token_invalid');
      expect((await apps.client.get(session(tampered))).status).toBe(403);
      const expired = tokens.sign({ runId, expiresAt: Math.floor(Date.now() / 1000) - 1 });
      const response = await apps.client.get(session(expired));
      expect(response.status).toBe(410);
      expect(response.body.code).toBe('session_expired');
    });

    it('rejects malformed events with 400 and stores nothing from them', async () => {
      // What a report writes to the run: its transcript turns, gathered context, usage, and the end of its session.
      const stored = async () => {
        const [row] = await apps.dataSource.query(
          `SELECT agent_transcript, gathered_context, cost_info->'usage' AS usage, agent_session_ended_at FROM workflow_runs WHERE id = $1`,
          [runId],
        );
        return row;
      };
      // Each malformed event follows valid ones of every kind: a batch is refused whole, so none of them may be kept.
      const valid = [
        { type: 'transcript', speaker: 'agent', text: 'from a refused batch', start_ms: 0, end_ms: 1 },
        { type: 'gathered_context', data: { from_refused_batch: true } },
        { type: 'usage', usage: { refused_batch_tokens: 1 } },
      ];
      const before = await stored();
      // The session is still open, so a valid batch would have been kept: what is checked is the refusal.
      expect(before.agent_session_ended_at).toBeNull();
      for (const body of [
        {},
        { events: [] },
        { events: [...valid, { type: 'transcript', speaker: 'robot', text: 'x', start_ms: 0, end_ms: 1 }] },
        { events: [...valid, { type: 'transcript', speaker: 'agent', text: 'x', start_ms: 5, end_ms: 1 }] },
        { events: [...valid, { type: 'usage', usage: { tokens: 'many' } }] },
        // Usage is a few named counters on every run record: not a name per turn, nor names of any length.
        { events: [...valid, { type: 'usage', usage: { ['n'.repeat(101)]: 1 } }] },
        { events: [...valid, { type: 'usage', usage: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`name_${i}`, i])) }] },
        { events: [...valid, { type: 'nonsense' }] },
        // What Postgres would refuse in the run (the statement failing whole): named instead.
        { events: [...valid, { type: 'transcript', speaker: 'agent', text: 'a\u0000b', start_ms: 0, end_ms: 1 }] },
        { events: [...valid, { type: 'gathered_context', data: { 'half \ud800': 1 } }] },
      ]) {
        const response = await apps.client.post(`${session(tokenFor(runId))}/events`, body);
        expect({ body, status: response.status }).toEqual({ body, status: 400 });
      }
      for (const [raw, where] of [
        ['{"type":"gathered_context","data":{"crm_id":12345678901234567890}}', 'events[3].data.crm_id'],
        ['{"type":"gathered_context","data":{"total":1e400}}', 'events[3].data.total'],
        ['{"type":"transcript","speaker":"user","text":"x\\u0000","start_ms":0,"end_ms":1}', 'events[3].text'],
      ]) {
        const text = `{"events":[${valid.map((event) => JSON.stringify(event)).join(',')},${raw}]}`;
        const response = await apps.client.post(`${session(tokenFor(runId))}/events`, undefined, { raw: text });
        expect({ where, status: response.status, code: response.body.code }).toEqual({ where, status: 400, code: 'validation_failed' });
        expect(response.body.message).toMatch(new RegExp(`^${where.replace(/[.[\]]/g, '\\$&')} `));
      }
      expect(await stored()).toEqual(before);
    });

    it('takes a retried report (its answer lost), or a turn repeated within one, without doubling its turns', async () => {
      const events = [
        { type: 'transcript', speaker: 'agent', text: 'Is Tuesday good?', start_ms: 50_000, end_ms: 51_000 },
        { type: 'transcript', speaker: 'user', text: 'Tuesday is good.', start_ms: 51_500, end_ms: 52_000 },
        { type: 'gathered_context', data: { retried_day: 'Tuesday' } },
      ];
      // Within one report too: the same turn sent twice is one turn.
      events.push(events[0]);
      const turnsLike = async () =>
        (await apps.dataSource.query(`SELECT agent_transcript FROM workflow_runs WHERE id = $1`, [runId]))[0].agent_transcript.filter(
          (turn: { start_ms: number }) => turn.start_ms >= 50_000 && turn.start_ms <= 52_000,
        );
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await apps.client.post(`${session(tokenFor(runId))}/events`, { events });
        expect(response.status).toBe(200);
      }
      expect(await turnsLike()).toEqual(events.slice(0, 2).map(({ type: _type, ...turn }) => turn));
      expect((await run(runId)).body.gathered_context).toMatchObject({ retried_day: 'Tuesday' });
    });

    it('answers 413 to usage past the 50 names a run keeps, storing nothing of that report, and takes counters it has again', async () => {
      const report = (usage: Record<string, number>, text: string) =>
        apps.client.post(`${session(tokenFor(runId))}/events`, {
          events: [{ type: 'transcript', speaker: 'user', text, start_ms: 0, end_ms: 1 }, { type: 'usage', usage }],
        });
      const usage = async () => (await apps.dataSource.query(`SELECT cost_info->'usage' AS usage FROM workflow_runs WHERE id = $1`, [runId]))[0].usage;
      const kept = Object.keys((await usage()) ?? {}).length;
      const names = (from: number, count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`counter_${from + i}`, 1]));
      expect((await report(names(0, 50 - kept), 'filling the usage')).status).toBe(200);
      const full = await usage();
      expect(Object.keys(full)).toHaveLength(50);

      const refused = await report(names(1000, 1), 'with one name too many');
      expect(refused.status).toBe(413);
      expect(refused.body.code).toBe('agent_report_too_large');
      expect(await usage()).toEqual(full);
      const [turns] = await apps.dataSource.query(`SELECT agent_transcript::text AS text FROM workflow_runs WHERE id = $1`, [runId]);
      expect(turns.text).not.toContain('with one name too many');

      // Counters it already has are updated in place: not a new name.
      expect((await report({ counter_0: 7 }, 'updating a counter')).status).toBe(200);
      expect(await usage()).toEqual({ ...full, counter_0: 7 });
    });

    it('answers 400, not 500, to gathered context nested deeper than any body may be', async () => {
      const depth = 100_000; // under the 1 MiB body limit, and far past what JSON.stringify can walk back
      const data = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      const raw = `{"events":[{"type":"gathered_context","data":${data}}]}`;
      const response = await apps.client.post(`${session(tokenFor(runId))}/events`, undefined, { raw });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect((await run(runId)).body.gathered_context).not.toHaveProperty('a');
    });

    it('refuses an audio body (up to 100 MiB, for recordings only) on any other route, before reading it', async () => {
      const audio = Buffer.alloc(2 * 1024 * 1024);
      for (const path of [`${session(tokenFor(runId))}/events`, '/api/v1/telephony/twilio/status/1', '/api/v1/public/agent/00000000-0000-0000-0000-000000000000']) {
        // The trigger's key is checked first (without one, 401 whatever the body): it comes with one.
        const key = path.startsWith('/api/v1/public/') ? org.adminKey : undefined;
        const response = await apps.client.post(path, undefined, { raw: audio, key, headers: { 'content-type': 'audio/wav' } });
        expect({ path, status: response.status, code: response.body?.code }).toEqual({ path, status: 415, code: 'unsupported_media_type' });
      }
    });

    it('refuses a recording that is not audio', async () => {
      const response = await apps.client.put(`${session(tokenFor(runId))}/recording`, { not: 'audio' });
      expect(response.status).toBe(415);
    });

    it.each(['constructor', '__proto__', 'toString'])('refuses a recording upload typed %s before admitting it, as any type not audio', async (type) => {
      const response = await apps.client.put(`${session(tokenFor(runId))}/recording`, undefined, { headers: { 'content-type': type } });
      expect(response.status).toBe(415);
      expect(response.body).toMatchObject({ code: 'unsupported_media_type', message: 'Upload the recording as audio/wav or audio/mpeg' });
      const [row] = await apps.dataSource.query(`SELECT recording_upload_admitted_at FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.recording_upload_admitted_at).toBeNull();
    });

    it('refuses, keeping nothing, a recording whose bytes are not of the type it names, or that comes compressed', async () => {
      const path = `${session(tokenFor(runId))}/recording`;
      const upload = (raw: Buffer, contentType: string, headers: Record<string, string> = {}) =>
        apps.client.put(path, undefined, { raw, headers: { 'content-type': contentType, ...headers } });
      for (const [raw, contentType] of [
        [Buffer.from('{"error":"the recorder failed"}'), 'audio/wav'],
        [Buffer.from('RIFF\0\0\0\0AVI LIST'), 'audio/wav'],
        [Buffer.from('RIFF\0\0\0\0WAVE'), 'audio/mpeg'],
        [Buffer.from('ID3\u0004\0'), 'audio/wav'],
      ] as const) {
        const response = await upload(raw, contentType);
        expect({ contentType, status: response.status, code: response.body.code }).toEqual({ contentType, status: 400, code: 'invalid_recording' });
      }
      // Refused on its head, before the body is read.
      await expect(uploadHead(path, 'audio/wav', 1024 * 1024, { 'Content-Encoding': 'gzip' })).resolves.toEqual({
        status: 415,
        code: 'unsupported_media_type',
      });
      const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.recording_key).toBeNull();
    });

    it('refuses a recording upload with a bad token or type before reading its body, and waits for the body of a good one', async () => {
      const token = tokenFor(runId);
      const tampered = `${token.slice(0, -2)}${token.endsWith('A') ? 'B' : 'A'}A`;
      await expect(uploadHead(`${session(tampered)}/recording`, 'audio/wav')).resolves.toMatchObject({ status: 403, code: 'session_token_invalid' });
      await expect(uploadHead(`${session(token)}/recording`, 'audio/ogg')).resolves.toMatchObject({ status: 415, code: 'unsupported_media_type' });
      // A type that is neither audio nor JSON (what many upload tools send) gets the session's answer first too, and
      // then the recording's own 415, not one asking for JSON.
      await expect(uploadHead(`${session(tampered)}/recording`, 'application/octet-stream')).resolves.toMatchObject({ status: 403, code: 'session_token_invalid' });
      const octets = await apps.client.put(`${session(token)}/recording`, undefined, { raw: Buffer.from('RIFF'), headers: { 'content-type': 'application/octet-stream' } });
      expect(octets.status).toBe(415);
      expect(octets.body).toMatchObject({ code: 'unsupported_media_type', message: 'Upload the recording as audio/wav or audio/mpeg' });
      // The same head with a good token and type is let through: the server waits for the body it announced.
      await expect(uploadHead(`${session(token)}/recording`, 'audio/wav')).resolves.toBe('admitted');
    });

    it("keeps the carrier's machine-detection verdict in gathered_context.answered_by over a report of that key", async () => {
      // The carrier said a human answered; the runtime reports its own reading under the same name, and more.
      await apps.dataSource.query(`UPDATE workflow_runs SET gathered_context = gathered_context || '{"answered_by": "human"}' WHERE id = $1`, [runId]);
      const events = [{ type: 'gathered_context', data: { answered_by: 'machine', callback_wanted: true } }];
      expect((await apps.client.post(`${session(tokenFor(runId))}/events`, { events })).status).toBe(200);
      const [row] = await apps.dataSource.query(`SELECT gathered_context FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.gathered_context).toMatchObject({ answered_by: 'human', callback_wanted: true });
    });

    it('closes the session for good once the runtime ends it', async () => {
      const token = tokenFor(runId);
      const ended = await apps.client.post(`${session(token)}/events`, { events: [{ type: 'session_ended' }] });
      expect(ended.status).toBe(200);
      const replay = await apps.client.get(session(token));
      expect(replay.status).toBe(410);
      expect(replay.body.code).toBe('session_ended');
      // A report, well formed or not, is refused as the session's, and nothing of it is kept.
      const before = (await run(runId)).body.gathered_context;
      for (const body of [{ events: [{ type: 'gathered_context', data: { after_end: true } }] }, { events: [{ type: 'nonsense' }] }]) {
        const late = await apps.client.post(`${session(token)}/events`, body);
        expect({ status: late.status, code: late.body.code }).toEqual({ status: 410, code: 'session_ended' });
      }
      expect((await run(runId)).body.gathered_context).toEqual(before);
    });

    it('answers 403, as for a bad token, a validly signed token of a run that does not exist, whatever the request', async () => {
      const token = tokenFor(Number.MAX_SAFE_INTEGER);
      for (const body of [{ events: [{ type: 'session_ended' }] }, { events: [{ type: 'nonsense' }] }]) {
        const response = await apps.client.post(`${session(token)}/events`, body);
        expect({ status: response.status, code: response.body.code }).toEqual({ status: 403, code: 'session_token_invalid' });
      }
      const read = await apps.client.get(session(token));
      expect({ status: read.status, code: read.body.code }).toEqual({ status: 403, code: 'session_token_invalid' });
      await expect(uploadHead(`${session(token)}/recording`, 'audio/wav')).resolves.toEqual({ status: 403, code: 'session_token_invalid' });
    });
  });

  describe('recording uploads', () => {
    let runId: number;
    let lastingConfigId: number;

    beforeAll(async () => {
      // A call that lasts well past these tests, however slowly a busy machine runs them.
      lastingConfigId = (
        await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
          settings: { ring_ms: 20, talk_ms: 120_000, builtin_agent: false },
          isDefaultOutbound: false,
        })
      ).id;
      runId = await trigger(lastingConfigId);
      await waitFor(async () => ((await run(runId)).body.status === 'in_progress' ? true : undefined));
    });

    it('reads at most 256 MiB of recordings at once, and answers 429 past it before reading the body', async () => {
      // Three calls in progress: one upload a run at a time (below).
      const others = [await trigger(longCallConfigId), await trigger(longCallConfigId)];
      for (const other of others) await waitFor(async () => ((await run(other)).body.status === 'in_progress' ? true : undefined));
      const [path, second, third] = [runId, ...others].map((id) => `${session(tokenFor(id))}/recording`);
      const MiB = 1024 * 1024;
      const held: Socket[] = [];
      try {
        // One after the other, so that each is admitted before the next asks: 200 MiB held.
        held.push(await heldUpload(path, 'audio/wav', 100 * MiB));
        held.push(await heldUpload(second, 'audio/wav', 100 * MiB));
        // Another 100 MiB is one too many; 50 still fit.
        await expect(uploadHead(third, 'audio/wav', 100 * MiB)).resolves.toEqual({ status: 429, code: 'recording_uploads_busy', retryAfter: '5' });
        await expect(uploadHead(third, 'audio/wav', 50 * MiB)).resolves.toBe('admitted');
      } finally {
        for (const socket of held) socket.destroy();
      }
      // Given back when a held upload's connection closes.
      await waitFor(async () => ((await uploadHead(third, 'audio/wav', 100 * MiB)) === 'admitted' ? true : undefined));
    });

    it('forgets the admission of an upload that stores nothing, and keeps the one still arriving when a second is refused', async () => {
      const path = `${session(tokenFor(runId))}/recording`;
      const admittedAt = async () =>
        (await apps.dataSource.query(`SELECT recording_upload_admitted_at AS at FROM workflow_runs WHERE id = $1`, [runId]))[0].at as Date | null;
      const first = await heldUpload(path, 'audio/wav', 1024 * 1024);
      let noted: Date | null;
      try {
        noted = await admittedAt();
        expect(noted).not.toBeNull();
        // Refused by this gateway's own limit, before it is noted: the first's admission stays as it was.
        await expect(uploadHead(path, 'audio/wav', 1024 * 1024)).resolves.toEqual({ status: 429, code: 'recording_upload_in_progress', retryAfter: '5' });
        expect(await admittedAt()).toEqual(noted);
      } finally {
        first.destroy();
      }
      // Cut short, it stores nothing: the dialer is not to wait for it.
      await waitFor(async () => ((await admittedAt()) === null ? true : undefined), { what: 'the admission of the upload cut short to be forgotten' });
    });

    it("refuses an upload while another gateway's upload of the run's recording is noted as arriving, and admits it once that one is forgotten", async () => {
      const path = `${session(tokenFor(runId))}/recording`;
      // Another gateway admitted an upload of this run a moment ago: only the run's row says so.
      const [[noted]] = await apps.dataSource.query(
        `UPDATE workflow_runs SET recording_upload_admitted_at = date_trunc('milliseconds', now()) WHERE id = $1 RETURNING recording_upload_admitted_at AS at`,
        [runId],
      );
      await expect(uploadHead(path, 'audio/wav', 1024 * 1024)).resolves.toEqual({ status: 429, code: 'recording_upload_in_progress', retryAfter: '5' });
      // Its admission untouched: the dialer still waits for it.
      expect((await apps.dataSource.query(`SELECT recording_upload_admitted_at AS at FROM workflow_runs WHERE id = $1`, [runId]))[0].at).toEqual(noted.at);
      await apps.dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = NULL WHERE id = $1`, [runId]);
      await expect(uploadHead(path, 'audio/wav', 1024 * 1024)).resolves.toBe('admitted');
      await waitFor(async () => ((await apps.dataSource.query(`SELECT recording_upload_admitted_at AS at FROM workflow_runs WHERE id = $1`, [runId]))[0].at === null ? true : undefined), {
        what: 'the admission of the upload cut short to be forgotten',
      });
    });

    it("refuses a second upload of a run's recording while the first is still arriving, before reading it", async () => {
      const path = `${session(tokenFor(runId))}/recording`;
      const first = await heldUpload(path, 'audio/wav', 1024 * 1024);
      try {
        await expect(uploadHead(path, 'audio/wav', 1024 * 1024)).resolves.toEqual({ status: 429, code: 'recording_upload_in_progress', retryAfter: '5' });
      } finally {
        first.destroy();
      }
      // Once the first is gone (its connection closed unfinished, nothing stored), another may come.
      await waitFor(async () => ((await uploadHead(path, 'audio/wav', 1024 * 1024)) === 'admitted' ? true : undefined));
    });

    it("holds a run's upload until its body is stored, though its client left as soon as the body was sent", async () => {
      const leaving = await trigger(lastingConfigId);
      await waitFor(async () => ((await run(leaving)).body.status === 'in_progress' ? true : undefined));
      const path = `${session(tokenFor(leaving))}/recording`;
      const storage = apps.api.get<ArtifactStorage>(ARTIFACT_STORAGE);
      const put = storage.put.bind(storage);
      let started!: () => void;
      const writing = new Promise<void>((resolve) => (started = resolve));
      let finish!: () => void;
      const slowDisk = new Promise<void>((resolve) => (finish = resolve));
      // Only this upload's write is slow: another call's agent may store its recording meanwhile (those are listed
      // in the retry's expectation below, to be seen should it fail).
      const otherWrites: string[] = [];
      const spy = jest.spyOn(storage, 'put').mockImplementation(async (...args) => {
        if (args[0] === artifactKey(leaving, 'recording', 'wav')) {
          started();
          await slowDisk;
        } else {
          otherWrites.push(args[0]);
        }
        return put(...args);
      });
      try {
        const audio = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), Buffer.alloc(64 * 1024)]);
        const client = startUpload(path, 'audio/wav', audio.length, {}, audio);
        await writing;
        // The runtime gives up (its own timeout) while the gateway writes the body it sent.
        client.destroy();
        await new Promise((resolve) => setTimeout(resolve, 200));
        // Its retry is not read beside it.
        expect({ retry: await uploadHead(path, 'audio/wav', 1024 * 1024), otherWrites }).toEqual({
          retry: { status: 429, code: 'recording_upload_in_progress', retryAfter: '5' },
          otherWrites: expect.any(Array),
        });
      } finally {
        finish();
        spy.mockRestore();
      }
      // The first upload is stored all the same, and the retry is then told so.
      await waitFor(async () => {
        const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [leaving]);
        return row.recording_key ? true : undefined;
      });
      await expect(uploadHead(path, 'audio/wav', 1024 * 1024)).resolves.toEqual({ status: 409, code: 'recording_already_stored' });
    });

    it('keeps nothing of an upload whose session ended while its body arrived: 410, as any later request gets', async () => {
      const ending = await trigger(lastingConfigId);
      await waitFor(async () => ((await run(ending)).body.status === 'in_progress' ? true : undefined));
      const token = tokenFor(ending);
      const audio = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), Buffer.alloc(256 * 1024)]);
      const admission = nextAdmission();
      const socket = startUpload(`${session(token)}/recording`, 'audio/wav', audio.length, { 'X-Request-Id': admission.id }, audio.subarray(0, 1024));
      try {
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString('latin1')));
        // Admitted on its head: the API waits for the rest of the body.
        await admission.admitted;
        expect(received).toBe('');

        const ended = await apps.client.post(`${session(token)}/events`, { events: [{ type: 'session_ended' }] });
        expect(ended.status).toBe(200);
        socket.write(audio.subarray(1024));
        const answer = await waitFor(async () => answerIn(received));
        expect(answer).toEqual({ status: 410, code: 'session_ended' });
      } finally {
        socket.destroy();
      }
      const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [ending]);
      expect(row.recording_key).toBeNull();
    });

    it('stores an upload whose token expires while its body arrives: the token counts when the head comes', async () => {
      const expiring = await trigger(lastingConfigId);
      await waitFor(async () => ((await run(expiring)).body.status === 'in_progress' ? true : undefined));
      const token = tokens.sign({ runId: expiring, expiresAt: Math.floor(Date.now() / 1000) + 2 });
      const audio = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), Buffer.alloc(64 * 1024)]);
      const admission = nextAdmission();
      const socket = startUpload(`${session(token)}/recording`, 'audio/wav', audio.length, { 'X-Request-Id': admission.id }, audio.subarray(0, 1024));
      try {
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString('latin1')));
        await admission.admitted;
        // The token has expired since: a request that starts now is refused with it.
        await waitFor(async () => (tokens.verify(token).ok ? undefined : true));
        expect((await apps.client.get(session(token))).body.code).toBe('session_expired');

        socket.write(audio.subarray(1024));
        expect(await waitFor(async () => answerIn(received))).toEqual({ status: 200, code: undefined });
      } finally {
        socket.destroy();
      }
      const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [expiring]);
      expect(row.recording_key).toEqual(expect.any(String));
    });

    it('keeps one recording: a second upload is refused, before its body is read', async () => {
      const path = `${session(tokenFor(runId))}/recording`;
      const first = await apps.client.put(path, undefined, { raw: Buffer.from('RIFF\0\0\0\0WAVEfirst'), headers: { 'content-type': 'audio/wav' } });
      expect(first.status).toBe(200);

      const second = await apps.client.put(path, undefined, { raw: Buffer.from('RIFF\0\0\0\0WAVEsecond'), headers: { 'content-type': 'audio/wav' } });
      expect({ status: second.status, code: second.body?.code }).toEqual({ status: 409, code: 'recording_already_stored' });
      await expect(uploadHead(path, 'audio/wav')).resolves.toMatchObject({ status: 409, code: 'recording_already_stored' });
      const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.recording_key).toEqual(expect.any(String));
    });
  });

  describe('a recording upload still arriving when its call ends', () => {
    let endingConfigId: number;
    let collector: RunArtifactsCollector;

    beforeAll(async () => {
      // Long enough for the upload to be admitted during the call, short enough to end while its body is held.
      endingConfigId = (
        await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
          settings: { ring_ms: 20, talk_ms: 2000, builtin_agent: false },
          isDefaultOutbound: false,
        })
      ).id;
      collector = apps.dialer!.get(RunArtifactsCollector);
    });

    /**
     * A run whose call is in progress and an upload of its recording that the
     * gateway admitted (its head and first kilobyte sent); `finish` sends the
     * rest and answers the API's answer.
     */
    const uploadAdmittedDuringCall = async () => {
      const runId = await trigger(endingConfigId);
      await waitFor(async () => ((await run(runId)).body.status === 'in_progress' ? true : undefined));
      const audio = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), randomBytes(64 * 1024)]);
      const admission = nextAdmission();
      const path = `${session(tokenFor(runId))}/recording`;
      const socket = startUpload(path, 'audio/wav', audio.length, { 'X-Request-Id': admission.id }, audio.subarray(0, 1024));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      await admission.admitted;
      const finish = () => {
        socket.write(audio.subarray(1024));
        return waitFor(async () => answerIn(received));
      };
      return { runId, audio, socket, finish };
    };
    const callEnded = (runId: number) => waitFor(async () => ((await run(runId)).body.status === 'completed' ? true : undefined));
    const recordingOf = async (runId: number) => Buffer.from(await (await fetch((await run(runId)).body.recording_url)).arrayBuffer());

    it("finishes the run only once the upload is in, and keeps the runtime's recording in place of the carrier's", async () => {
      const upload = await uploadAdmittedDuringCall();
      try {
        await callEnded(upload.runId);
        // The reaper forcing the run complete (here, the test in its place) waits for the upload still arriving.
        expect(await collector.collect(upload.runId, true)).toBe(false);
        expect((await run(upload.runId)).body.is_completed).toBe(false);
        expect(await upload.finish()).toEqual({ status: 200, code: undefined });
      } finally {
        upload.socket.destroy();
      }
      expect(await collector.collect(upload.runId, true)).toBe(true);
      expect((await run(upload.runId)).body.is_completed).toBe(true);
      expect(await recordingOf(upload.runId)).toEqual(upload.audio);
    });

    it("stores an upload that outlasted the wait as the finished run's recording, late, when the run has none", async () => {
      const upload = await uploadAdmittedDuringCall();
      const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox') as SandboxProvider;
      const collectArtifacts = sandbox.collectArtifacts.bind(sandbox);
      // The carrier has no recording of this call.
      const spy = jest
        .spyOn(sandbox, 'collectArtifacts')
        .mockImplementation(async (request) =>
          request.runId === upload.runId ? { ...(await collectArtifacts(request)), recording: null } : collectArtifacts(request),
        );
      try {
        await callEnded(upload.runId);
        // Admitted as long ago as its request may take to arrive: the dialer closes the session and finishes the run.
        await apps.dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '1 hour' WHERE id = $1`, [
          upload.runId,
        ]);
        expect(await collector.collect(upload.runId, true)).toBe(true);
        expect((await run(upload.runId)).body).toMatchObject({ is_completed: true, recording_url: null });

        expect(await upload.finish()).toEqual({ status: 200, code: undefined });
      } finally {
        spy.mockRestore();
        upload.socket.destroy();
      }
      expect(await recordingOf(upload.runId)).toEqual(upload.audio);
      const events = (await run(upload.runId)).body.logs.events;
      expect(events.at(-1)).toMatchObject({ event: 'artifacts.late_recording_stored', detail: { source: 'agent_runtime' } });
    });
  });

  it('refuses a token of a run that has ended', async () => {
    const runId = await trigger(0);
    await waitFor(async () => ((await run(runId)).body.is_completed ? true : undefined));
    const response = await apps.client.get(session(tokenFor(runId)));
    expect(response.status).toBe(410);
    await expect(uploadHead(`${session(tokenFor(runId))}/recording`, 'audio/wav')).resolves.toMatchObject({ status: 410, code: 'session_ended' });
  });

  describe('a runtime that reports without reading its session (as one streaming from the dial on may)', () => {
    const reportTurns = (runId: number, turns: unknown[]) =>
      apps.client.post(`${session(tokenFor(runId))}/events`, { events: turns.map((turn) => ({ type: 'transcript', ...(turn as object) })) });
    let shortCallConfigId: number;
    let writes: GroupedRunWrites;
    let complete: GroupedRunWrites['completeArtifacts'];

    beforeAll(async () => {
      shortCallConfigId = (
        await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 200, builtin_agent: false }, isDefaultOutbound: false })
      ).id;
      writes = apps.dialer!.get(GroupedRunWrites);
      complete = writes.completeArtifacts.bind(writes);
    });

    /**
     * Has `turns` reported for the run `triggered` answers as its artifacts are
     * completed: after it was read, without a session, for it. (The run may be
     * collected before its trigger is answered: any run waits for that answer.)
     */
    const reportAsCompleted = (triggered: Promise<number>, turns: unknown[]) => {
      const raced: { report?: Promise<{ status: number }> } = {};
      const spy = jest.spyOn(writes, 'completeArtifacts').mockImplementation(async (id, artifacts) => {
        if (id === (await triggered)) await (raced.report ??= reportTurns(id, turns));
        return complete(id, artifacts);
      });
      return { raced, spy };
    };

    it("keeps its turns when one lands as the run's transcript is stored: the run waits for it instead", async () => {
      const turns = [{ speaker: 'user', text: 'Hello?', start_ms: 0, end_ms: 400 }];
      const triggered = trigger(shortCallConfigId);
      const { raced, spy } = reportAsCompleted(triggered, turns);
      try {
        const runId = await triggered;
        const report = await waitFor(async () => raced.report);
        expect((await report).status).toBe(200);
        // The run now waits for the runtime it has heard from, which ends its session.
        const ended = await apps.client.post(`${session(tokenFor(runId))}/events`, { events: [{ type: 'session_ended' }] });
        expect(ended.status).toBe(200);
        const completed = await waitFor(async () => ((await run(runId)).body.is_completed ? (await run(runId)).body : undefined));
        expect((await apps.client.get(completed.transcript_url)).body.turns).toEqual(turns);
      } finally {
        spy.mockRestore();
      }
    });

    it('finishes a run forced complete at once when one lands as its transcript is stored, the report included', async () => {
      const turns = [{ speaker: 'user', text: 'Who is calling?', start_ms: 0, end_ms: 500 }];
      const collector = apps.dialer!.get(RunArtifactsCollector);
      const collect = collector.collect.bind(collector);
      const triggered = trigger(shortCallConfigId);
      // The call's own events leave the run to the reaper, which forces it complete (here, the test in its place).
      const collectSpy = jest
        .spyOn(collector, 'collect')
        .mockImplementation(async (id, force, giveUp) => (id === (await triggered) && !force ? false : collect(id, force, giveUp)));
      const { raced, spy } = reportAsCompleted(triggered, turns);
      try {
        const runId = await triggered;
        await waitFor(async () => ((await run(runId)).body.status === 'completed' ? true : undefined));
        expect(await collector.collect(runId, true)).toBe(true);
        expect((await raced.report!).status).toBe(200);
        const completed = (await run(runId)).body;
        expect(completed.is_completed).toBe(true);
        expect((await apps.client.get(completed.transcript_url)).body.turns).toEqual(turns);
      } finally {
        collectSpy.mockRestore();
        spy.mockRestore();
      }
    });
  });

  describe('the sandbox carrier webhooks', () => {
    let runId: number;
    beforeAll(async () => {
      runId = await trigger(longCallConfigId);
      await waitFor(async () => ((await run(runId)).body.status === 'in_progress' ? true : undefined));
    });
    const answerUrl = () => `${apps.baseUrl}/api/v1/telephony/sandbox/answer/${runId}`;
    const signed = (body: string, timestamp = Date.now(), url = answerUrl()) => ({
      'x-sandbox-timestamp': String(timestamp),
      'x-sandbox-signature': new SandboxSignature(apps.config.secretsKey).sign('POST', url, Buffer.from(body), timestamp),
    });

    it('answers a signed answer request with a stream URL carrying a session token for the run', async () => {
      const body = JSON.stringify({ call_id: 'x' });
      const response = await apps.client.post(answerUrl(), undefined, { raw: body, headers: signed(body) });
      expect(response.status).toBe(200);
      expect(tokens.verify(response.body.session_token)).toMatchObject({ ok: true, grant: { runId } });
      expect(new URL(response.body.stream_url).searchParams.get('session_token')).toBe(response.body.session_token);
    });

    it("mints a token that outlives the run's whole call and what the runtime sends after it, however long the call may last", async () => {
      await apps.dataSource.query(`UPDATE workflow_runs SET max_call_duration_seconds = 14400 WHERE id = $1`, [runId]);
      const body = JSON.stringify({ call_id: 'x', long: true });
      const response = await apps.client.post(answerUrl(), undefined, { raw: body, headers: signed(body) });
      expect(response.status).toBe(200);
      // A 4-hour call's last report and recording upload, 15 minutes after its hang-up, still come with a live token.
      const afterTheCall = Math.floor(Date.now() / 1000) + 14_400 + 15 * 60;
      expect(tokens.verify(response.body.session_token, afterTheCall)).toMatchObject({ ok: true, grant: { runId } });
    });

    it('answers 401 to an unsigned request and 403 to a forged or replayed one', async () => {
      const body = JSON.stringify({ call_id: 'x' });
      expect((await apps.client.post(answerUrl(), undefined, { raw: body })).status).toBe(401);
      const forged = { ...signed(body), 'x-sandbox-signature': 'AAAA' };
      expect((await apps.client.post(answerUrl(), undefined, { raw: body, headers: forged })).status).toBe(403);
      const stale = Date.now() - 10 * 60 * 1000;
      const replayed = await apps.client.post(answerUrl(), undefined, { raw: body, headers: signed(body, stale) });
      expect(replayed.status).toBe(403);
      // An exact copy within the signature's five minutes: refused too, so it cannot mint another session token.
      const headers = signed(body, Date.now() - 1000);
      expect((await apps.client.post(answerUrl(), undefined, { raw: body, headers })).status).toBe(200);
      const copy = await apps.client.post(answerUrl(), undefined, { raw: body, headers });
      expect(copy.status).toBe(403);
      expect(copy.body.session_token).toBeUndefined();
      expect(replayed.body.code).toBe('webhook_signature_invalid');
      const tamperedBody = await apps.client.post(answerUrl(), undefined, { raw: JSON.stringify({ call_id: 'y' }), headers: signed(body) });
      expect(tamperedBody.status).toBe(403);
    });

    it('answers 404 for an unknown carrier', async () => {
      expect((await apps.client.post(`${apps.baseUrl}/api/v1/telephony/nope/status/${runId}`, {})).status).toBe(404);
    });

    // Not a 404 for an unknown run: that would tell anyone without a signature which run ids exist.
    it('answers an unknown run id as a known one: 401 unsigned, and a valid signature the 403 of a forged one', async () => {
      const unknownUrl = `${apps.baseUrl}/api/v1/telephony/sandbox/answer/999999`;
      const body = JSON.stringify({ call_id: 'x' });
      const known = await apps.client.post(answerUrl(), undefined, { raw: body });
      const unknown = await apps.client.post(unknownUrl, undefined, { raw: body });
      expect([unknown.status, unknown.body.code, unknown.body.message]).toEqual([401, 'webhook_unsigned', known.body.message]);
      const forged = await apps.client.post(answerUrl(), undefined, { raw: body, headers: { ...signed(body), 'x-sandbox-signature': 'AAAA' } });
      const signedUnknown = await apps.client.post(unknownUrl, undefined, { raw: body, headers: signed(body, Date.now(), unknownUrl) });
      expect([signedUnknown.status, signedUnknown.body.code, signedUnknown.body.message]).toEqual([
        403,
        'webhook_signature_invalid',
        forged.body.message,
      ]);
    });
  });
});
