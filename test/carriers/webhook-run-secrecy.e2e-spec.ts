import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { TelephonyConfiguration } from '@app/persistence';
import { WEBHOOK_BODY_LIMIT_BYTES } from '../../apps/api/src/create-api-app';
import { LoopbackWebhook } from '../fakes/loopback-http-fake';
import { PlivoFake } from '../fakes/plivo-fake';
import { TelnyxFake } from '../fakes/telnyx-fake';
import { TwilioFake } from '../fakes/twilio-fake';
import { VonageFake } from '../fakes/vonage-fake';
import { agentGraph, createOrganization, seedStrandedDialingRun, seedWorkflow, SeededWorkflow, TestOrganization } from '../support/fixtures';
import { sandboxSigned } from '../support/sandbox-webhook';
import { startTestApps, TestApps } from '../support/test-apps';
import { CALLEE, FROM } from './carrier-harness';

/** Every header that carries a carrier's signature: a request without them is unsigned for every carrier. */
const SIGNATURE_HEADERS = [
  'x-twilio-signature',
  'x-plivo-signature-v3',
  'x-plivo-signature-ma-v3',
  'telnyx-signature-ed25519',
  'authorization',
  'x-sandbox-signature',
];

/** How one carrier signs a callback to a URL: with its configuration's credentials, and as a forger would. */
interface Signer {
  provider: string;
  /** The configuration credentials that make `signed` valid; null for the sandbox, which signs with our own key. */
  credentials: Record<string, string> | null;
  signed(url: string): LoopbackWebhook;
  forged(url: string): LoopbackWebhook;
}

const twilio = new TwilioFake();
const plivo = new PlivoFake();
const telnyx = new TelnyxFake();
const telnyxForger = new TelnyxFake();
const vonage = new VonageFake();
const twilioFields = { CallSid: `CA${'0'.repeat(32)}`, AccountSid: TwilioFake.ACCOUNT_SID, CallStatus: 'ringing' };
const plivoFields = { CallUUID: '00000000-0000-4000-8000-000000000000', CallStatus: 'ringing', Event: 'StartApp' };
/** Telnyx signs the body, not the URL: a genuine event names its run in `client_state`, as our dials ask. */
const telnyxEventFor = (url: string) => {
  const path = new URL(url).pathname;
  return {
    data: {
      event_type: 'call.initiated',
      // An event of its own each time: Telnyx signs the second and the body, and an exact copy is a replay.
      id: randomUUID(),
      occurred_at: new Date().toISOString(),
      payload: { client_state: Buffer.from(path.slice(path.lastIndexOf('/') + 1)).toString('base64') },
    },
  };
};
const vonageEvent = { status: 'ringing', uuid: 'u', conversation_uuid: 'c', timestamp: new Date().toISOString() };

let sandboxKey: Buffer;

const SIGNERS: Signer[] = [
  {
    provider: 'sandbox',
    credentials: null,
    signed: (url) => sandboxSigned(url, sandboxKey),
    forged: (url) => sandboxSigned(url, randomBytes(32)),
  },
  {
    provider: 'twilio',
    credentials: twilio.credentials,
    signed: (url) => twilio.signedRequest(url, twilioFields),
    forged: (url) => twilio.signedRequest(url, twilioFields, { authToken: 'f'.repeat(32) }),
  },
  {
    provider: 'plivo',
    credentials: plivo.credentials,
    signed: (url) => plivo.signedRequest(url, plivoFields),
    forged: (url) => plivo.signedRequest(url, plivoFields, { authToken: 'f'.repeat(40) }),
  },
  {
    provider: 'telnyx',
    credentials: telnyx.credentials,
    signed: (url) => telnyx.signedRequest(url, telnyxEventFor(url)),
    forged: (url) => telnyxForger.signedRequest(url, telnyxEventFor(url)),
  },
  {
    provider: 'vonage',
    credentials: vonage.credentials,
    signed: (url) => vonage.signedRequest(url, vonageEvent),
    forged: (url) => vonage.signedRequest(url, vonageEvent, { secret: randomBytes(24).toString('base64url') }),
  },
];

function unsigned(webhook: LoopbackWebhook): LoopbackWebhook {
  const headers = Object.fromEntries(Object.entries(webhook.headers).filter(([name]) => !SIGNATURE_HEADERS.includes(name)));
  return { ...webhook, headers };
}

/**
 * The webhook with its body grown to `bytes`: a padding field added to its
 * form, or to its JSON object. Its signature no longer matches.
 */
function padded(webhook: LoopbackWebhook, bytes: number): LoopbackWebhook {
  const json = (webhook.headers['content-type'] ?? '').startsWith('application/json');
  const withPad = (pad: string) =>
    json
      ? Buffer.from(JSON.stringify({ ...JSON.parse(webhook.rawBody.toString('utf8')), pad }), 'utf8')
      : Buffer.concat([webhook.rawBody, Buffer.from(`&pad=${pad}`, 'utf8')]);
  const rawBody = withPad('x'.repeat(bytes - withPad('').length));
  expect(rawBody.length).toBe(bytes);
  return { ...webhook, rawBody };
}

/**
 * A carrier's webhook URL names a run, and anyone can call it. Without a
 * valid signature for that very run, the answer must not tell whether the
 * run exists, which carrier it uses, or whether its configuration holds the
 * credentials to check a signature with.
 */
describe('carrier webhooks tell an unsigned or forged caller nothing about the run', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let workflow: SeededWorkflow;
  /** Per carrier: its run (credentials that verify `signed`), and one whose configuration has no credentials. */
  const runs = new Map<string, { run: number; withoutCredentials: number | null }>();

  beforeAll(async () => {
    // No dialer: the seeded runs stay as they are, whatever a webhook enqueues.
    apps = await startTestApps({ dialer: false });
    sandboxKey = apps.config.secretsKey;
    org = await createOrganization(apps.dataSource, 'Webhook secrecy');
    workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    for (const { provider, credentials } of SIGNERS) {
      const configId = credentials ? await createConfiguration(provider, credentials) : (await seedConfiguration(provider)).id;
      // The sandbox signs with our own key: no configuration of it lacks what checks a signature.
      const withoutCredentials = credentials ? await seedRun(provider, (await seedConfiguration(provider)).id) : null;
      runs.set(provider, { run: await seedRun(provider, configId), withoutCredentials });
    }
  });
  afterAll(() => apps?.close());

  async function createConfiguration(provider: string, credentials: Record<string, string>): Promise<number> {
    const response = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: `${provider} line`, provider, credentials, from_numbers: [FROM], is_default_outbound: false },
      { key: org.adminKey },
    );
    if (response.status !== 201) throw new Error(`creating the ${provider} configuration answered ${response.status}: ${response.text}`);
    return response.body.id;
  }

  function seedConfiguration(provider: string): Promise<TelephonyConfiguration> {
    return apps.dataSource.getRepository(TelephonyConfiguration).save({
      organizationId: org.organizationId,
      name: `${provider} line without credentials`,
      provider,
      credentialsEncrypted: null,
      fromNumbers: [FROM],
      isDefaultOutbound: false,
      callsPerSecond: 10,
      maxConcurrentCalls: 10,
      maxCallDurationSeconds: 3600,
      settings: {},
    });
  }

  function seedRun(provider: string, telephonyConfigurationId: number): Promise<number> {
    return seedStrandedDialingRun(apps.dataSource, {
      organizationId: org.organizationId,
      workflow,
      telephonyConfigurationId,
      provider,
      to: CALLEE,
      from: FROM,
      dialedSecondsAgo: 0,
    });
  }

  /** Run ids of every kind but the carrier's own, each named by what it is. */
  function elsewhere(provider: string): Array<[string, string]> {
    const other = SIGNERS.find((signer) => signer.provider !== provider)!.provider;
    const targets: Array<[string, string]> = [
      [`a run of ${other}`, String(runs.get(other)!.run)],
      ['an id with no run', '2147483647'],
      ['an id with no run, past int4', '99999999999'],
      ['an id past the run id range', '9007199254740992'],
      ['an id that is not a number', 'nope'],
    ];
    const bare = runs.get(provider)!.withoutCredentials;
    if (bare !== null) targets.unshift(['a run whose configuration has no credentials', String(bare)]);
    return targets;
  }

  async function send(webhook: LoopbackWebhook): Promise<{ status: number; code: string; message: string }> {
    const response = await fetch(webhook.url, { method: webhook.method, headers: webhook.headers, body: webhook.rawBody });
    const text = await response.text();
    const body = (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : {};
    return { status: response.status, code: body.code, message: body.message };
  }

  const url = (provider: string, kind: string, runId: string) => `${apps.baseUrl}/api/v1/telephony/${provider}/${kind}/${runId}`;

  /**
   * Sends a webhook with its request line in the absolute form HTTP/1.1
   * allows (`POST http://proxy.example/api/… HTTP/1.1`, as a forward proxy
   * sends it), which the router routes by its path. Answers the status and
   * the error code.
   */
  function sendAbsolute(webhook: LoopbackWebhook): Promise<{ status: number; code: string | undefined }> {
    const target = new URL(webhook.url);
    const head = [
      `${webhook.method} http://proxy.example:8080${target.pathname}${target.search} HTTP/1.1`,
      'Host: proxy.example:8080',
      ...Object.entries(webhook.headers).map(([name, value]) => `${name}: ${value}`),
      `Content-Length: ${webhook.rawBody.length}`,
      'Connection: close',
      '',
      '',
    ].join('\r\n');
    return new Promise((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname);
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        const answer = Buffer.concat(chunks).toString('utf8');
        const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
        if (!status) return reject(new Error(`no HTTP answer: ${answer.slice(0, 200)}`));
        resolve({ status: Number(status[1]), code: /"code":"([^"]+)"/.exec(answer)?.[1] });
      });
      socket.write(head);
      socket.write(webhook.rawBody);
    });
  }

  describe.each(SIGNERS.map((signer) => [signer.provider, signer] as const))('%s', (provider, signer) => {
    it.each(['answer', 'status'])(
      'answers a request to the %s URL without signature headers the same 401 webhook_unsigned, whatever run its id names',
      async (kind) => {
        const own = await send(unsigned(signer.signed(url(provider, kind, String(runs.get(provider)!.run)))));
        expect(own).toEqual({ status: 401, code: 'webhook_unsigned', message: expect.any(String) });
        for (const [target, runId] of elsewhere(provider)) {
          const answer = await send(unsigned(signer.signed(url(provider, kind, runId))));
          expect({ target, answer }).toEqual({ target, answer: own });
        }
      },
    );

    it('answers a forged signature the same 403 webhook_signature_invalid, whatever run its id names', async () => {
      const own = await send(signer.forged(url(provider, 'status', String(runs.get(provider)!.run))));
      expect(own).toEqual({ status: 403, code: 'webhook_signature_invalid', message: expect.any(String) });
      for (const [target, runId] of elsewhere(provider)) {
        const answer = await send(signer.forged(url(provider, 'status', runId)));
        expect({ target, answer }).toEqual({ target, answer: own });
      }
    });

    it('takes a request whose request line holds an absolute URL as one to its path: refused when forged, taken when genuine', async () => {
      // A query of its own, so the genuine request is not the copy of another test's (a replay).
      const runUrl = `${url(provider, 'status', String(runs.get(provider)!.run))}?sent=absolute`;
      expect(await sendAbsolute(signer.forged(runUrl))).toEqual({ status: 403, code: 'webhook_signature_invalid' });
      expect(await sendAbsolute(unsigned(signer.signed(runUrl)))).toEqual({ status: 401, code: 'webhook_unsigned' });
      expect(await sendAbsolute(signer.signed(runUrl))).toEqual({ status: 200, code: undefined });
    });

    it('answers a body over 64 KiB 413 payload_too_large, signed or not, before its signature is checked', async () => {
      const runUrl = url(provider, 'status', String(runs.get(provider)!.run));
      for (const webhook of [signer.signed(runUrl), signer.forged(runUrl), unsigned(signer.signed(runUrl))]) {
        const answer = await send(padded(webhook, WEBHOOK_BODY_LIMIT_BYTES + 1));
        expect(answer).toEqual({ status: 413, code: 'payload_too_large', message: expect.any(String) });
      }
      // At the limit, the body is read and checked as any other.
      expect(await send(padded(signer.forged(runUrl), WEBHOOK_BODY_LIMIT_BYTES))).toEqual({
        status: 403,
        code: 'webhook_signature_invalid',
        message: expect.any(String),
      });
    });

    it("answers a signature that is valid for the carrier's account, on a URL whose run it cannot verify, as a forged one", async () => {
      const forged = await send(signer.forged(url(provider, 'status', String(runs.get(provider)!.run))));
      // The same signature on the run's own URL is accepted: what the other URLs refuse is the run, not the signing.
      const accepted = await send(signer.signed(url(provider, 'status', String(runs.get(provider)!.run))));
      expect(accepted.status).toBe(200);
      for (const [target, runId] of elsewhere(provider)) {
        const answer = await send(signer.signed(url(provider, 'status', runId)));
        expect({ target, answer }).toEqual({ target, answer: forged });
      }
    });
  });
});
