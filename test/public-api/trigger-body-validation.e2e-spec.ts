import { ApiResponse } from '../support/api-client';
import {
  CallableOrganization,
  countRuns,
  expectError,
  seededRandom,
  seedCallableOrganization,
  triggerPath,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const MIB = 1024 * 1024;
const CONTEXT_LIMIT = 64 * 1024;
const PHONE = '+14155552671';

/** An initial_context whose compact JSON is exactly `bytes` long. */
function contextOfJsonBytes(bytes: number): Record<string, string> {
  const overhead = JSON.stringify({ pad: '' }).length;
  return { pad: 'x'.repeat(bytes - overhead) };
}

describe('trigger body: validation, limits and fuzz', () => {
  let apps: TestApps;
  let target: CallableOrganization;

  beforeAll(async () => {
    apps = await startTestApps();
    target = await seedCallableOrganization(apps.dataSource, { name: 'Body validation' });
  });
  afterAll(() => apps.close());

  const runCount = () => countRuns(apps.dataSource, target.org.organizationId);

  function post(body: unknown, environment: 'production' | 'test' = 'production') {
    return apps.client.post(triggerPath(target.workflow.triggerUuid, environment), body, { key: target.org.adminKey });
  }

  function postRaw(raw: string | Buffer, headers: Record<string, string> = {}) {
    return apps.client.post(triggerPath(target.workflow.triggerUuid), undefined, {
      key: target.org.adminKey,
      raw,
      headers,
    });
  }

  async function expectRejectedWithoutRun(send: () => Promise<ApiResponse>, status: number, code: string) {
    const before = await runCount();
    const response = await send();
    expectError(response, status, code);
    expect(await runCount()).toBe(before);
    return response;
  }

  describe('size limits', () => {
    it('answers 413 payload_too_large with the error body for a body over 1 MiB', async () => {
      const raw = JSON.stringify({ phone_number: PHONE, initial_context: contextOfJsonBytes(MIB) });
      expect(Buffer.byteLength(raw)).toBeGreaterThan(MIB);
      await expectRejectedWithoutRun(() => postRaw(raw), 413, 'payload_too_large');
    });

    it('answers 401, not 413, for a body over 1 MiB without a key: the key is checked before the body is read', async () => {
      const raw = JSON.stringify({ phone_number: PHONE, initial_context: contextOfJsonBytes(MIB + 10) });
      const response = await apps.client.post(triggerPath(target.workflow.triggerUuid), undefined, { raw });
      expectError(response, 401, 'unauthorized');
    });

    it('answers 400 for an initial_context of 64 KiB + 1 byte of JSON', async () => {
      const context = contextOfJsonBytes(CONTEXT_LIMIT + 1);
      expect(Buffer.byteLength(JSON.stringify(context))).toBe(CONTEXT_LIMIT + 1);
      const response = await expectRejectedWithoutRun(
        () => post({ phone_number: PHONE, initial_context: context }),
        400,
        'validation_failed',
      );
      expect(response.body.message).toContain('initial_context');
    });

    it('answers 400 for an initial_context under 1 MiB but far over 64 KiB', async () => {
      await expectRejectedWithoutRun(
        () => post({ phone_number: PHONE, initial_context: contextOfJsonBytes(MIB - 1000) }),
        400,
        'validation_failed',
      );
    });

    it('accepts an initial_context of exactly 64 KiB of JSON', async () => {
      const context = contextOfJsonBytes(CONTEXT_LIMIT);
      const response = await post({ phone_number: PHONE, initial_context: context });
      expect(response.status).toBe(200);
    });

    it('counts the 64 KiB of initial_context in UTF-8 bytes, not characters', async () => {
      const overhead = JSON.stringify({ pad: '' }).length;
      // 'é' is two bytes: the characters fit 64 K, the bytes do not.
      const context = { pad: 'é'.repeat(Math.ceil((CONTEXT_LIMIT - overhead) / 2) + 1) };
      expect(JSON.stringify(context).length).toBeLessThan(CONTEXT_LIMIT);
      expect(Buffer.byteLength(JSON.stringify(context))).toBeGreaterThan(CONTEXT_LIMIT);
      await expectRejectedWithoutRun(() => post({ phone_number: PHONE, initial_context: context }), 400, 'validation_failed');
    });
  });

  describe('malformed JSON and content types', () => {
    it.each([
      ['a truncated object', '{"phone_number": "+14155552671"'],
      ['a trailing comma', '{"phone_number": "+14155552671",}'],
      ['single quotes', "{'phone_number': '+14155552671'}"],
      ['bare words', 'phone_number=+14155552671'],
      ['an unquoted key', '{phone_number: "+14155552671"}'],
      ['two objects', '{}{}'],
      ['a lone brace', '{'],
    ])('answers 400 for malformed JSON: %s', async (_, raw) => {
      await expectRejectedWithoutRun(() => postRaw(raw), 400, 'invalid_json');
    });

    it('answers 400 naming the missing phone number for an empty body declared as JSON (no body, not bad JSON)', async () => {
      const response = await expectRejectedWithoutRun(() => postRaw(''), 400, 'validation_failed');
      expect(response.body.message).toMatch(/phone_number/);
    });

    it('answers 400 for a __proto__ key (prototype poisoning)', async () => {
      const response = await expectRejectedWithoutRun(
        () => postRaw(`{"phone_number":"${PHONE}","initial_context":{"__proto__":{"polluted":true}}}`),
        400,
        'invalid_json',
      );
      // Said as what it is: the JSON is valid.
      expect(response.body.message).toMatch(/^The body has a "__proto__" key, or a "constructor" object holding a "prototype" key/);
    });

    it('answers the same for a __proto__ key in a body that starts with a byte-order mark', async () => {
      const response = await expectRejectedWithoutRun(
        () => postRaw(`\ufeff{"phone_number":"${PHONE}","initial_context":{"__proto__":{"polluted":true}}}`),
        400,
        'invalid_json',
      );
      expect(response.body.message).toMatch(/^The body has a "__proto__" key/);
    });

    it('answers 400 for a constructor object holding a prototype key (prototype poisoning)', async () => {
      const response = await expectRejectedWithoutRun(
        () => postRaw(`{"phone_number":"${PHONE}","initial_context":{"user":{"constructor":{"prototype":{"polluted":true}}}}}`),
        400,
        'invalid_json',
      );
      // Said as what it is: the JSON is valid.
      expect(response.body.message).toMatch(/^The body has a "__proto__" key, or a "constructor" object holding a "prototype" key/);
    });

    it.each([
      ['a JSON array', '[{"phone_number": "+14155552671"}]'],
      ['a JSON string', '"+14155552671"'],
      ['a JSON number', '14155552671'],
      ['JSON true', 'true'],
    ])('answers 400 validation_failed, saying the body must be an object, for %s as the whole body', async (_, raw) => {
      const response = await expectRejectedWithoutRun(() => postRaw(raw), 400, 'validation_failed');
      expect(response.body.message).toBe('The body must be a JSON object (one request per object: an array is not taken)');
    });

    it.each([
      ['JSON null', 'null'],
      ['an empty object', '{}'],
    ])('answers 400 validation_failed, naming the missing number, for %s as the whole body', async (_, raw) => {
      const response = await expectRejectedWithoutRun(() => postRaw(raw), 400, 'validation_failed');
      expect(response.body.details).toEqual([{ field: 'phone_number', message: expect.stringMatching(/^phone_number must be/) }]);
    });

    it('answers 415 unsupported_media_type for a body without Content-Type', async () => {
      const before = await runCount();
      const response = await fetch(`${apps.baseUrl}${triggerPath(target.workflow.triggerUuid)}`, {
        method: 'POST',
        headers: { 'x-api-key': target.org.adminKey },
        body: new TextEncoder().encode(JSON.stringify({ phone_number: PHONE })),
      });
      const text = await response.text();
      expectError(
        { status: response.status, headers: response.headers, body: JSON.parse(text), text },
        415,
        'unsupported_media_type',
      );
      expect(await runCount()).toBe(before);
    });

    it('answers 415 unsupported_media_type for a body declared as XML', async () => {
      await expectRejectedWithoutRun(
        () => postRaw('<call><phone_number>+14155552671</phone_number></call>', { 'content-type': 'application/xml' }),
        415,
        'unsupported_media_type',
      );
    });

    it('answers 415 unsupported_media_type, naming JSON, for a JSON body sent as text/plain', async () => {
      const response = await expectRejectedWithoutRun(
        () => postRaw(JSON.stringify({ phone_number: PHONE }), { 'content-type': 'text/plain' }),
        415,
        'unsupported_media_type',
      );
      expect(response.body.message).toBe('Send the body as JSON, with Content-Type: application/json');
    });

    it('answers 415 for form fields (what curl -d sends without a type), not a 400 about the number', async () => {
      // Read as a form, `+` is a space: the number would have been refused for lacking the plus it was sent with.
      const response = await expectRejectedWithoutRun(
        () => postRaw(`phone_number=${PHONE}`, { 'content-type': 'application/x-www-form-urlencoded' }),
        415,
        'unsupported_media_type',
      );
      expect(response.body.message).toMatch(/application\/json/);
    });

    it('takes JSON whatever the case and parameters of its Content-Type', async () => {
      const response = await postRaw(JSON.stringify({ phone_number: PHONE }), { 'content-type': 'Application/JSON; charset=utf-8' });
      expect(response.status).toBe(200);
      expect(response.body.status).toBe('initiated');
    });
  });

  describe('wrong types and unknown fields', () => {
    it.each<[string, Record<string, unknown>]>([
      ['phone_number missing', {}],
      ['phone_number a number', { phone_number: 14155552671 }],
      ['phone_number an array', { phone_number: [PHONE] }],
      ['phone_number null', { phone_number: null }],
      ['phone_number an object', { phone_number: { number: PHONE } }],
      ['phone_number a boolean', { phone_number: true }],
      ['phone_number empty', { phone_number: '' }],
      ['phone_number without a plus', { phone_number: '14155552671' }],
      ['phone_number with letters', { phone_number: '+1 415 CALL NOW' }],
      ['phone_number too short', { phone_number: '+1' }],
      ['phone_number with an unknown country code', { phone_number: '+999 1234' }],
      ['phone_number with two plus signs', { phone_number: '++14155552671' }],
      ['phone_number too long', { phone_number: `+1${'5'.repeat(60)}` }],
      ['phone_number too long for its country, read as a carrier code and another number', { phone_number: '+86 12345678901234' }],
      ['phone_number past E.164’s 15 digits', { phone_number: '+49123456789012345' }],
      ['initial_context an array', { phone_number: PHONE, initial_context: [{ a: 1 }] }],
      ['initial_context a string', { phone_number: PHONE, initial_context: '{"a":1}' }],
      ['initial_context a number', { phone_number: PHONE, initial_context: 42 }],
      ['initial_context a boolean', { phone_number: PHONE, initial_context: false }],
      ['telephony_configuration_id a string', { phone_number: PHONE, telephony_configuration_id: '1' }],
      ['telephony_configuration_id a float', { phone_number: PHONE, telephony_configuration_id: 1.5 }],
      ['telephony_configuration_id negative', { phone_number: PHONE, telephony_configuration_id: -1 }],
      ['telephony_configuration_id zero', { phone_number: PHONE, telephony_configuration_id: 0 }],
      ['telephony_configuration_id beyond int range', { phone_number: PHONE, telephony_configuration_id: 2147483648 }],
      ['telephony_configuration_id huge', { phone_number: PHONE, telephony_configuration_id: 1e300 }],
      ['telephony_configuration_id an array', { phone_number: PHONE, telephony_configuration_id: [1] }],
      ['telephony_configuration_id an object', { phone_number: PHONE, telephony_configuration_id: { id: 1 } }],
      ['telephony_configuration_id a boolean', { phone_number: PHONE, telephony_configuration_id: true }],
      ['an unknown field', { phone_number: PHONE, callback_url: 'https://example.com' }],
      ['a system field (workflow_id)', { phone_number: PHONE, workflow_id: 1 }],
      ['a system field (environment)', { phone_number: PHONE, environment: 'production' }],
      ['an unknown field in camelCase', { phoneNumber: PHONE }],
    ])('answers 400 validation_failed for %s', async (_, body) => {
      const response = await expectRejectedWithoutRun(() => post(body), 400, 'validation_failed');
      expect(response.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.any(String) })]));
    });

    it.each(['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'prototype'])(
      'answers 400 for the unknown top-level field %s, which names an object member',
      async (field) => {
        const response = await expectRejectedWithoutRun(
          () => postRaw(`{"phone_number":"${PHONE}","${field}":1}`),
          400,
          'validation_failed',
        );
        expect(response.body.details).toEqual([expect.objectContaining({ field })]);
      },
    );

    it.each([
      ['a NUL character in a value', { note: 'a\u0000b' }],
      ['a NUL character in a key', { 'a\u0000b': 1 }],
      ['a NUL character deep inside', { a: [{ b: ['ok', 'x\u0000'] }] }],
      ['a lone high surrogate', { note: 'x\ud83d' }],
      ['a lone low surrogate', { note: '\ude00x' }],
    ])('answers 400, never 5xx, for an initial_context holding %s (Postgres cannot store it)', async (_, context) => {
      await expectRejectedWithoutRun(() => post({ phone_number: PHONE, initial_context: context }), 400, 'validation_failed');
    });

    it('accepts an initial_context with paired surrogates (emoji) and escaped backslashes', async () => {
      const context = { note: 'smile 😀 and a literal \\u0000 text' };
      const response = await post({ phone_number: PHONE, initial_context: context });
      expect(response.status).toBe(200);
    });

    it.each([100, 100_000])('answers 400, never 5xx, for a body nested %d levels deep', async (depth) => {
      const raw = `{"phone_number":"${PHONE}","initial_context":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
      await expectRejectedWithoutRun(() => postRaw(raw), 400, 'validation_failed');
    });

    it('answers 400, never 5xx, for a whole body that is an array nested 100000 levels deep', async () => {
      await expectRejectedWithoutRun(() => postRaw(`${'['.repeat(100_000)}${']'.repeat(100_000)}`), 400, 'validation_failed');
    });

    it('accepts an initial_context nested 50 levels deep and stores it as sent', async () => {
      let context: Record<string, unknown> = { leaf: 'deep' };
      for (let level = 0; level < 49; level++) context = { [`l${level}`]: context };
      const response = await post({ phone_number: PHONE, initial_context: context });
      expect(response.status).toBe(200);
      const [row] = await apps.dataSource.query(`SELECT initial_context FROM workflow_runs WHERE id = $1`, [
        response.body.workflow_run_id,
      ]);
      expect(row.initial_context).toStrictEqual(context);
    });

    it('answers 400 on the test URL exactly like on the production URL', async () => {
      await expectRejectedWithoutRun(() => post({ phone_number: [PHONE] }, 'test'), 400, 'validation_failed');
    });

    it('lists every offending field in details', async () => {
      const response = await expectRejectedWithoutRun(
        () => post({ phone_number: 5, initial_context: [], telephony_configuration_id: 'x', extra: 1 }),
        400,
        'validation_failed',
      );
      const fields = new Set(response.body.details.map((detail: { field: string }) => detail.field));
      expect([...fields].sort()).toEqual(['extra', 'initial_context', 'phone_number', 'telephony_configuration_id']);
    });
  });

  describe('fuzz', () => {
    it('answers only 4xx with the error body, and stores no run, for 400 seeded random malformed bodies', async () => {
      const random = seededRandom(0x5eed);
      const bodies = Array.from({ length: 400 }, () => malformedBody(random));
      const before = await runCount();
      const codes = new Map<string, number>();
      for (let start = 0; start < bodies.length; start += 25) {
        const batch = bodies.slice(start, start + 25);
        const responses = await Promise.all(
          batch.map((body, index) =>
            apps.client.post(
              triggerPath(target.workflow.triggerUuid, (start + index) % 2 ? 'test' : 'production'),
              undefined,
              { key: target.org.adminKey, raw: body.raw, headers: body.headers },
            ),
          ),
        );
        responses.forEach((response, index) => {
          codes.set(response.body?.code, (codes.get(response.body?.code) ?? 0) + 1);
          const label = `fuzz body #${start + index}: ${batch[index].raw.slice(0, 200)} → ${response.status} ${response.text.slice(0, 200)}`;
          expect({ label, clientError: response.status >= 400 && response.status < 500 }).toEqual({ label, clientError: true });
          expect(response.body).toEqual(
            expect.objectContaining({ statusCode: response.status, code: expect.any(String), request_id: expect.any(String) }),
          );
        });
      }
      expect(await runCount()).toBe(before);
      // Most bodies must reach validation, or the fuzz only exercises the JSON parser.
      expect(codes.get('validation_failed') ?? 0).toBeGreaterThan(300);
      expect(codes.get('invalid_json') ?? 0).toBeGreaterThan(10);

      // The counter is live: one valid body stores exactly one run.
      const control = await post({ phone_number: PHONE, initial_context: { fuzz: 'control' } });
      expect(control.status).toBe(200);
      expect(await runCount()).toBe(before + 1);
    });
  });
});

interface FuzzBody {
  raw: string;
  headers?: Record<string, string>;
}

const JUNK_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  -0.0001,
  2147483648,
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  '',
  ' ',
  'null',
  '0',
  '+',
  '++1',
  '+1 (',
  'DROP TABLE workflow_runs;',
  '{{ initial_context }}',
  '\u0000',
  '\ud83d\ude00',
  'x'.repeat(300),
  [],
  [1, 2],
  [null],
  {},
  { a: 1 },
  { phone_number: PHONE },
];

const BAD_PHONES: unknown[] = [
  ...JUNK_VALUES,
  '4155552671',
  '+1 415 555 267',
  '+44 20',
  '+1-800-FLOWERS',
  '+1 415 555 2671 ext 5',
  `+${'1'.repeat(41)}`,
  '+0 123 456 789',
];

const BAD_CONTEXTS: unknown[] = [true, false, 0, 7, -3.2, 'context', '', '{}', [], [{}], [1, 'a']];
const BAD_CONFIG_IDS: unknown[] = [0, -1, -2147483648, 1.5, 2147483648, 1e21, '1', '', 'abc', true, false, [], [1], {}, { id: 1 }];
const UNKNOWN_KEYS = ['workflow_id', 'status', 'environment', 'api_key', 'trigger', 'phone', 'PHONE_NUMBER', '$where', 'constructor', ''];

function pick<T>(random: () => number, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)];
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'application/octet-stream',
  'multipart/form-data; boundary=x',
];

/** One body that must be refused, now and then under another content type. */
function malformedBody(random: () => number): FuzzBody {
  const body = malformedJson(random);
  return random() < 0.15 ? { ...body, headers: { 'content-type': pick(random, CONTENT_TYPES) } } : body;
}

/** JSON text that must be refused: at least one problem is always injected. */
function malformedJson(random: () => number): FuzzBody {
  const kind = random();
  if (kind < 0.1) return { raw: brokenJson(random) };
  if (kind < 0.15) return { raw: JSON.stringify(pick(random, [[], [PHONE], 'x', 12, true, null])) };

  const body: Record<string, unknown> = {};
  const problems = new Set<string>();
  while (problems.size === 0) {
    if (random() < 0.5) problems.add('phone');
    if (random() < 0.3) problems.add('context');
    if (random() < 0.3) problems.add('config');
    if (random() < 0.3) problems.add('unknown');
    if (random() < 0.1) problems.add('missing-phone');
  }
  if (!problems.has('missing-phone')) body.phone_number = problems.has('phone') ? pick(random, BAD_PHONES) : PHONE;
  if (problems.has('context')) body.initial_context = pick(random, BAD_CONTEXTS);
  else if (random() < 0.5) body.initial_context = { user: { name: pick(random, JUNK_VALUES) }, n: random() };
  if (problems.has('config')) body.telephony_configuration_id = pick(random, BAD_CONFIG_IDS);
  else if (random() < 0.3) body.telephony_configuration_id = null;
  if (problems.has('unknown')) body[pick(random, UNKNOWN_KEYS)] = pick(random, JUNK_VALUES);
  if (problems.has('missing-phone') && problems.size === 1 && random() < 0.5) body.phone = PHONE;
  return { raw: JSON.stringify(body) };
}

/** A valid body's JSON text, cut or corrupted until it no longer parses. */
function brokenJson(random: () => number): string {
  const source = JSON.stringify({ phone_number: PHONE, initial_context: { user: { name: 'Ada' } } });
  for (;;) {
    let text: string;
    const how = random();
    if (how < 0.4) text = source.slice(0, Math.floor(random() * source.length));
    else if (how < 0.8) {
      const at = Math.floor(random() * source.length);
      text = source.slice(0, at) + pick(random, ['{', '}', '"', ',', ':', '[', '\\', 'x']) + source.slice(at);
    } else text = source.replace(/"/g, pick(random, ["'", '', '`']));
    try {
      JSON.parse(text);
    } catch {
      return text;
    }
  }
}
