import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsObject } from 'class-validator';
import { DEFINITION_LIMITS } from './definition-limits';

/**
 * A `definition` body field. The pipe only checks that it is an object; its
 * graph is checked by `DefinitionValidator`, which answers `invalid_definition`.
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
    IsObject({ message: 'definition must be a JSON object' }),
  );
}
