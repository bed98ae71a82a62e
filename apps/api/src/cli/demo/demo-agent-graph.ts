import { DefinitionGraph } from '@app/persistence';

/** The demo agent: trigger → greeting with the caller's name → short conversation → hang up. */
export function demoAgentGraph(triggerUuid: string): DefinitionGraph {
  return {
    nodes: [
      { id: 'trigger', type: 'trigger', data: { trigger_path: triggerUuid } },
      {
        id: 'start',
        type: 'startCall',
        data: {
          prompt: 'You are Ava, a friendly assistant from the demo clinic. Confirm the appointment for tomorrow at 10:00.',
          greeting: 'Hi {{ initial_context.customer.name | default: "there" }}, this is Ava from the demo clinic.',
        },
      },
      {
        id: 'agent',
        type: 'agentNode',
        data: { prompt: 'Answer questions about the appointment briefly. When the caller is done, thank them and say goodbye.' },
      },
      { id: 'end', type: 'endCall', data: {} },
    ],
    edges: [
      { source: 'trigger', target: 'start' },
      { source: 'start', target: 'agent' },
      { source: 'agent', target: 'end' },
    ],
  };
}
