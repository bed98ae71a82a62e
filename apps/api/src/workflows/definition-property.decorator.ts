import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, isObject, ValidateBy } from 'class-validator';
import { KeepAsSent } from '@app/common';
import { DEFINITION_LIMITS } from './definition-limits';

const NOT_AN_OBJECT = 'definition must be a JSON object';

/**
 * A `definition` body field. The pipe only checks that it is an object; its
 * graph is checked by `DefinitionValidator`, which answers `invalid_definition`.
 * It reaches the validator as sent: stripped by the pipe, a `toString` or
 * `constructor` key vanished from node data, and an unknown top-level one was
 * never refused.
 */
export function DefinitionProperty(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      type: 'object',
      additionalProperties: true,
      description:
        '`{nodes: [{id, type, data}], edges: [{source, target}]}`. Node types: `startCall` (`data.prompt`, ' +
        'optional `data.greeting`), `agentNode` (`data.prompt`), `endCall`, `trigger` (`data.trigger_path`: a UUID, ' +
        'assigned by the server when absent). Prompts and greetings are Liquid templates. Exactly one startCall; ' +
        `at most ${DEFINITION_LIMITS.maxNodes} nodes and ${DEFINITION_LIMITS.maxJsonBytes / 1024} KiB of JSON.`,
      example: {
        nodes: [
          { id: 'trigger', type: 'trigger', data: {} },
          { id: 'start', type: 'startCall', data: { prompt: 'You are a friendly assistant.', greeting: 'Hello {{ initial_context.name | default: "there" }}!' } },
          { id: 'end', type: 'endCall', data: {} },
        ],
        edges: [
          { source: 'trigger', target: 'start' },
          { source: 'start', target: 'end' },
        ],
      },
    }),
    KeepAsSent(),
    // A missing or null definition is IsDefined's to refuse; the object rule leaves those to it, so it is named once.
    IsDefined({ message: NOT_AN_OBJECT }),
    IsObjectWhenPresent(),
  );
}

/** An object, where there is a value: a missing or null definition is IsDefined's to refuse, so it is named once. */
function IsObjectWhenPresent(): PropertyDecorator {
  const validate = (value: unknown) => value === undefined || value === null || isObject(value);
  return ValidateBy({ name: 'isObject', validator: { validate } }, { message: NOT_AN_OBJECT });
}
