import 'reflect-metadata';
import { ArgumentMetadata } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsInt, IsObject, IsOptional, Max, Min, ValidateBy } from 'class-validator';
import { createValidationPipe, DomainError, INEXACT_NUMBER_MESSAGE, inexactNumberPath, KeepAsSent, toE164 } from '@app/common';
import { seededRandom } from '../../../../test/support/seeded-random';
import { INITIAL_CONTEXT_MAX_BYTES, PHONE_NUMBER_MESSAGE, TriggerCallDto } from './trigger-call.dto';

/** The context's size, its text's storability and its numbers, in that order. */
function contextProblem(value: unknown): string | undefined {
  const text = JSON.stringify(value ?? null);
  if (Buffer.byteLength(text, 'utf8') > INITIAL_CONTEXT_MAX_BYTES) return `initial_context must be at most ${INITIAL_CONTEXT_MAX_BYTES} bytes of JSON`;
  if (/(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i.test(text)) {
    return 'initial_context must not contain NUL characters or unpaired UTF-16 surrogates, in keys or values';
  }
  const inexact = inexactNumberPath(value, 'initial_context');
  return inexact === undefined ? undefined : `${inexact} ${INEXACT_NUMBER_MESSAGE}`;
}

/**
 * The trigger body's rules as class-validator decorators, as the body was
 * checked before `TriggerCallDto.parseBody`: the reference every body below
 * must be answered alike by.
 */
class DecoratedTriggerCall {
  @Transform(({ value }) => toE164(value) ?? value)
  @ValidateBy({
    name: 'isE164',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && toE164(value) === value,
      defaultMessage: () => PHONE_NUMBER_MESSAGE,
    },
  })
  phone_number: string;

  @KeepAsSent()
  @IsOptional()
  @IsObject({ message: 'initial_context must be a JSON object' })
  @ValidateBy({
    name: 'storableJson',
    validator: {
      validate: (value: unknown) => contextProblem(value) === undefined,
      defaultMessage: (args) => contextProblem(args?.value) ?? '',
    },
  })
  initial_context?: Record<string, unknown> | null;

  @IsOptional()
  @IsInt({ message: 'telephony_configuration_id must be an integer or null' })
  @Min(1)
  @Max(2_147_483_647)
  telephony_configuration_id?: number | null;
}

const PHONE = '+14155552671';
const pipe = createValidationPipe();
const asBody = (metatype: ArgumentMetadata['metatype']): ArgumentMetadata => ({ type: 'body', metatype, data: undefined });

/** What the handler is given: its fields (those set to undefined too) and their values as JSON text. */
type Outcome =
  | { accepted: { fields: string[]; json: string } }
  | { refused: { status: number; code: string; message: string; details: unknown } };

async function outcomeOf(metatype: ArgumentMetadata['metatype'], body: unknown): Promise<Outcome> {
  // Each side gets its own copy: the pipes may not change what they are given, but must not be trusted to.
  const copy: unknown = body === undefined ? undefined : JSON.parse(JSON.stringify(body));
  try {
    // As text: jest's equality takes an own `constructor` key, which a context may hold, for the object's class.
    const parsed = (await pipe.transform(copy, asBody(metatype))) as object;
    return { accepted: { fields: Object.keys(parsed), json: JSON.stringify(parsed) } };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return { refused: { status: error.status, code: error.code, message: error.message, details: error.details } };
  }
}

async function expectSameAnswer(body: unknown): Promise<Outcome> {
  const reference = await outcomeOf(DecoratedTriggerCall, body);
  const parsed = await outcomeOf(TriggerCallDto, body);
  expect({ body, answer: parsed }).toStrictEqual({ body, answer: reference });
  return parsed;
}

const BAD_PHONES: unknown[] = [
  14155552671,
  [PHONE],
  null,
  true,
  {},
  '',
  '14155552671',
  '+1 415 CALL NOW',
  '+1',
  '+999 1234',
  '++14155552671',
  `+1${'5'.repeat(60)}`,
  '+44',
  'x',
];
const GOOD_PHONES = [PHONE, '+1 (415) 555-2671', ' +14155552671 ', '+14155552671\n', '+44 20 7946 0958', '+33 1 23 45 67 89'];
const CONTEXTS: unknown[] = [
  { user: { name: 'Ada' } },
  {},
  null,
  [],
  [{ a: 1 }],
  'x',
  '{"a":1}',
  42,
  false,
  { note: 'a\u0000b' },
  { 'a\u0000b': 1 },
  { a: [{ b: ['ok', 'x\u0000'] }] },
  { note: 'x\ud83d' },
  { note: '\ude00x' },
  { note: 'smile 😀 and a literal \\u0000 text' },
  { note: 'a \\\\u0000 escaped twice' },
  { big: 'x'.repeat(INITIAL_CONTEXT_MAX_BYTES) },
  { big: 'é'.repeat(INITIAL_CONTEXT_MAX_BYTES / 2 - 6) },
  'x'.repeat(INITIAL_CONTEXT_MAX_BYTES + 1),
  ['\u0000'],
  { constructor: { prototype: 1 }, toString: 'kept', valueOf: 2 },
  { crm_id: Number('12345678901234567890') },
  { list: [1, 2, { id: 2 ** 60 }] },
  { 'a key': { n: -(2 ** 53) } },
  { largest: Number.MAX_SAFE_INTEGER, least: Number.MIN_SAFE_INTEGER, float: 1.5e300, tiny: 5e-324 },
  { both: 'x\u0000', id: 2 ** 60 },
];
const CONFIG_IDS: unknown[] = [1, 7, 2_147_483_647, null, '1', 1.5, -1, 0, 2_147_483_648, 1e300, [1], { id: 1 }, true, 'x'];
const UNKNOWN_FIELDS = ['callback_url', 'workflow_id', 'environment', 'phoneNumber', 'phone', 'extra', 'zz', ''];

describe('TriggerCallDto.parseBody', () => {
  it('accepts a valid body, normalising the number and keeping the context exactly as sent', async () => {
    const context = { user: { name: 'Ada' }, constructor: { prototype: 1 }, toString: 'kept' };
    const body = { phone_number: '+1 (415) 555-2671', initial_context: context, telephony_configuration_id: 3 };
    const answer = await expectSameAnswer(body);
    expect(answer).toStrictEqual({
      accepted: {
        fields: ['phone_number', 'initial_context', 'telephony_configuration_id'],
        json: JSON.stringify({ phone_number: PHONE, initial_context: context, telephony_configuration_id: 3 }),
      },
    });
  });

  it('answers the handler a TriggerCallDto with the absent fields undefined', async () => {
    const parsed = await pipe.transform({ phone_number: PHONE }, asBody(TriggerCallDto));
    expect(parsed).toBeInstanceOf(TriggerCallDto);
    const expected = { phone_number: PHONE, initial_context: undefined, telephony_configuration_id: undefined };
    expect(parsed).toStrictEqual(Object.assign(new TriggerCallDto(), expected));
  });

  it.each<[string, unknown]>([
    ['a missing number', {}],
    ...BAD_PHONES.map((phone) => [`the number ${JSON.stringify(phone)}`, { phone_number: phone }] as [string, unknown]),
    ...GOOD_PHONES.map((phone) => [`the number ${JSON.stringify(phone)}`, { phone_number: phone }] as [string, unknown]),
    ...CONTEXTS.map((context, index) => [`context #${index}`, { phone_number: PHONE, initial_context: context }] as [string, unknown]),
    ...CONFIG_IDS.map(
      (id) => [`the configuration ${JSON.stringify(id)}`, { phone_number: PHONE, telephony_configuration_id: id }] as [string, unknown],
    ),
    ...UNKNOWN_FIELDS.map((field) => [`the unknown field "${field}"`, { phone_number: PHONE, [field]: 1 }] as [string, unknown]),
    ['every field wrong', { phone_number: 5, initial_context: [], telephony_configuration_id: 'x', extra: 1, zz: 2 }],
    ['a body that is null', null],
    ['a body that is an array', [{ phone_number: PHONE }]],
    ['a body that is a string', PHONE],
    ['a body that is a number', 5],
    ['no body', undefined],
  ])('answers %s as the class-validator rules do', async (_, body) => {
    await expectSameAnswer(body);
  });

  it('refuses a number whose normal form is not its own, each time it is sent', async () => {
    for (let round = 0; round < 2; round++) {
      const answer = await expectSameAnswer({ phone_number: '+49 (0)030 901820' });
      expect(answer).toMatchObject({ refused: { status: 400 } });
    }
  });

  it('answers 2,000 seeded random bodies as the class-validator rules do', async () => {
    const random = seededRandom(0x7419);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
    let refused = 0;
    for (let index = 0; index < 2_000; index++) {
      const body: Record<string, unknown> = {};
      if (random() < 0.95) body.phone_number = random() < 0.8 ? pick(GOOD_PHONES) : pick(BAD_PHONES);
      if (random() < 0.6) body.initial_context = random() < 0.5 ? pick(CONTEXTS) : { user: { name: 'Ada' }, n: random() };
      if (random() < 0.4) body.telephony_configuration_id = random() < 0.5 ? pick(CONFIG_IDS) : Math.ceil(random() * 1000);
      while (random() < 0.1) body[pick(UNKNOWN_FIELDS)] = pick([1, null, 'x', { a: 1 }]);
      const answer = await expectSameAnswer(body);
      if ('refused' in answer) refused++;
    }
    // Both kinds of answer were compared many times.
    expect(refused).toBeGreaterThan(400);
    expect(refused).toBeLessThan(1_600);
  });

  it('lists every unknown field, those that name an object member included, with the other problems', async () => {
    const body = JSON.parse(`{"constructor":1,"toString":2,"__proto__":{"x":1},"extra":3,"phone_number":5}`) as unknown;
    await expect(pipe.transform(body, asBody(TriggerCallDto))).rejects.toMatchObject({
      code: 'validation_failed',
      details: [
        { field: 'constructor', message: 'property constructor should not exist' },
        { field: 'toString', message: 'property toString should not exist' },
        { field: '__proto__', message: 'property __proto__ should not exist' },
        { field: 'extra', message: 'property extra should not exist' },
        { field: 'phone_number', message: PHONE_NUMBER_MESSAGE },
      ],
    });
  });

  it('refuses a context number the JSON parser could not read as written, naming where it is', () => {
    // 1e400 parses to Infinity, which the context would be stored with as null.
    expect(() => TriggerCallDto.parseBody({ phone_number: PHONE, initial_context: { order: { total: Infinity } } })).toThrow(
      expect.objectContaining({ details: [{ field: 'initial_context', message: `initial_context.order.total ${INEXACT_NUMBER_MESSAGE}` }] }),
    );
    expect(() => TriggerCallDto.parseBody({ phone_number: PHONE, initial_context: { ids: [1, Number('12345678901234567890')] } })).toThrow(
      expect.objectContaining({ details: [{ field: 'initial_context', message: `initial_context.ids[1] ${INEXACT_NUMBER_MESSAGE}` }] }),
    );
    expect(TriggerCallDto.parseBody({ phone_number: PHONE, initial_context: { id: Number.MAX_SAFE_INTEGER, x: 0.1 } }).initial_context).toEqual({
      id: Number.MAX_SAFE_INTEGER,
      x: 0.1,
    });
  });

  it('does not take a field from a prototype the body was given', async () => {
    const body = Object.create({ phone_number: PHONE }) as unknown;
    await expect(pipe.transform(body, asBody(TriggerCallDto))).rejects.toMatchObject({
      details: [{ field: 'phone_number', message: PHONE_NUMBER_MESSAGE }],
    });
  });

  it('accepts a body whose deepest object is 64 levels down and refuses one at 65', async () => {
    const bodyWithObjectsDown = (levels: number) => {
      // The body is level 1 and its context level 2; arrays count as levels too.
      let context: unknown = {};
      for (let level = 4; level <= levels; level++) context = level % 2 ? [context] : { next: context };
      return { phone_number: PHONE, initial_context: { next: context } };
    };
    await expect(pipe.transform(bodyWithObjectsDown(64), asBody(TriggerCallDto))).resolves.toBeInstanceOf(TriggerCallDto);
    await expect(pipe.transform(bodyWithObjectsDown(65), asBody(TriggerCallDto))).rejects.toMatchObject({
      message: 'The body is nested more than 64 levels deep',
    });
  });

  it('still refuses a body nested deeper than the pipe allows before reading it', async () => {
    let context: unknown = 'leaf';
    for (let level = 0; level < 100; level++) context = [context];
    const body = { phone_number: PHONE, initial_context: { deep: context } };
    await expect(pipe.transform(body, asBody(TriggerCallDto))).rejects.toMatchObject({
      code: 'validation_failed',
      message: 'The body is nested more than 64 levels deep',
    });
  });
});
