import { ApiProperty } from '@nestjs/swagger';

/** What the agent runtime gets for a session: the rendered agent and the call it serves. */
export class AgentSessionView {
  @ApiProperty({ type: 'integer' }) run_id: number;
  @ApiProperty({ type: 'integer' }) workflow_id: number;
  @ApiProperty({ type: 'integer', nullable: true }) definition_id: number | null;
  @ApiProperty({
    description: "Every node's rendered prompt and greeting; `opening` is what the agent says first",
    example: { opening: 'Hello Ada!', nodes: [{ id: 'start', type: 'startCall', prompt: 'You are...', greeting: 'Hello Ada!' }] },
  })
  agent: { opening: string; nodes: Array<{ id: string; type: string; prompt: string | null; greeting: string | null }> };
  @ApiProperty({ example: { direction: 'outbound', to: '+14155550100', from: '+15005550006', provider: 'twilio', provider_call_id: 'CA...' } })
  call: { direction: string; to: string; from: string | null; provider: string | null; provider_call_id: string | null };
  @ApiProperty({ type: 'object', additionalProperties: true }) initial_context: Record<string, unknown>;
}
