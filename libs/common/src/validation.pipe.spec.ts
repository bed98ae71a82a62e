import 'reflect-metadata';
import { ArgumentMetadata } from '@nestjs/common';
import { IsObject, IsString } from 'class-validator';
import { DomainError } from './domain-error';
import { createValidationPipe, KeepAsSent } from './validation.pipe';

/** A body with a required free-form property kept as sent, like a workflow's `definition`. */
class RequiredKeptBody {
  @IsString({ message: 'name must be a string' })
  name: string;

  @KeepAsSent()
  @IsObject({ message: 'graph must be a JSON object' })
  graph: Record<string, unknown>;
}

const pipe = createValidationPipe();
const asBody: ArgumentMetadata = { type: 'body', metatype: RequiredKeptBody, data: undefined };

async function refusalOf(body: unknown): Promise<{ code: string; details: unknown }> {
  const error: unknown = await pipe.transform(body, asBody).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof DomainError)) throw new Error(`expected a refusal, got ${String(error)}`);
  return { code: error.code, details: error.details };
}

describe('validation pipe: a required property kept as sent', () => {
  it('takes it, with keys named like Object.prototype members, at any depth, as sent', async () => {
    const graph = JSON.parse('{"toString":1,"constructor":"c","nodes":[{"data":{"hasOwnProperty":"h","prototype":"p"}}]}');
    const parsed = (await pipe.transform({ name: 'w', graph }, asBody)) as RequiredKeptBody;
    expect(parsed).toBeInstanceOf(RequiredKeptBody);
    expect(parsed.graph).toBe(graph);
    expect(JSON.stringify(parsed.graph)).toBe('{"toString":1,"constructor":"c","nodes":[{"data":{"hasOwnProperty":"h","prototype":"p"}}]}');
  });

  it('refuses it when missing, naming it once', async () => {
    await expect(refusalOf({ name: 'w' })).resolves.toEqual({
      code: 'validation_failed',
      details: [{ field: 'graph', message: 'graph must be a JSON object' }],
    });
  });

  it('judges it by its own rules, and the rest of the body by theirs, naming every problem', async () => {
    const { details } = await refusalOf({ name: 5, graph: [] });
    expect(details).toEqual(
      expect.arrayContaining([
        { field: 'name', message: 'name must be a string' },
        { field: 'graph', message: 'graph must be a JSON object' },
      ]),
    );
    expect(details).toHaveLength(2);
  });

  it('still refuses a missing one while another body that sends it is validated at the same time', async () => {
    const [missing, sent] = await Promise.allSettled([
      pipe.transform({ name: 'a' }, asBody),
      pipe.transform({ name: 'b', graph: { nodes: [] } }, asBody),
    ]);
    expect(missing.status).toBe('rejected');
    expect(sent.status).toBe('fulfilled');
  });
});
