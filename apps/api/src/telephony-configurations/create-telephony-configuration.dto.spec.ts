import 'reflect-metadata';
import { ArgumentMetadata } from '@nestjs/common';
import { createValidationPipe, DomainError, toE164 } from '@app/common';
import { CreateTelephonyConfigurationDto } from './create-telephony-configuration.dto';

// Counted: a list refused for its length must be refused without parsing its numbers.
jest.mock('@app/common', () => {
  const actual = jest.requireActual('@app/common');
  return { ...actual, toE164: jest.fn(actual.toE164) };
});
const parses = toE164 as jest.MockedFunction<typeof toE164>;

describe('CreateTelephonyConfigurationDto from_numbers', () => {
  const pipe = createValidationPipe();
  const metadata: ArgumentMetadata = { type: 'body', metatype: CreateTelephonyConfigurationDto };
  const validate = (fromNumbers: unknown) => pipe.transform({ name: 'Main', provider: 'sandbox', from_numbers: fromNumbers }, metadata);
  const numbers = (count: number) => Array.from({ length: count }, (_, index) => `+1 415 555 ${String(index).padStart(4, '0')}`);

  beforeEach(() => parses.mockClear());

  it('normalises and dedupes up to 100 numbers', async () => {
    const body = await validate([...numbers(100), '+14155550000']);
    expect(body.from_numbers).toHaveLength(100);
    expect(body.from_numbers[0]).toBe('+14155550000');
  });

  it('refuses a list of more than 200 distinct entries without parsing any of them', async () => {
    const error = await validate(numbers(5_000)).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(DomainError);
    expect(JSON.stringify((error as DomainError).details)).toContain('from_numbers must contain no more than 100 elements');
    expect(parses).not.toHaveBeenCalled();
  });

  it('takes a longer list whose repeats leave 100 or fewer, and refuses one that leaves more', async () => {
    expect((await validate([...numbers(60), ...numbers(60)])).from_numbers).toHaveLength(60);
    // The same 100 numbers written two ways: 200 entries, one number each twice.
    const twoWays = [...numbers(100), ...numbers(100).map((number) => number.replace(/ /g, ''))];
    expect((await validate(twoWays)).from_numbers).toHaveLength(100);
    await expect(validate(numbers(150))).rejects.toBeInstanceOf(DomainError);
  });
});
