import { Body, Controller, Get, Headers, HttpCode, Param, Post, Put, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AgentSessionsService } from './agent-sessions.service';
import { RecordingUploads } from './recording-uploads';
import { AgentSessionView } from './agent-session-view';

/**
 * The contract with the voice-agent runtime. The token in the path (from the
 * stream URL of an answered call) is the only credential.
 */
@ApiTags('agent-sessions')
@Controller('api/v1/agent-sessions/:token')
export class AgentSessionsController {
  constructor(
    private readonly sessions: AgentSessionsService,
    private readonly uploads: RecordingUploads,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'getAgentSession', summary: 'The rendered agent, the call and its initial_context' })
  @ApiOkResponse({ type: AgentSessionView })
  get(@Param('token') token: string): Promise<AgentSessionView> {
    return this.sessions.get(token);
  }

  @Post('events')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'reportAgentEvents',
    summary: 'Transcript turns, gathered context, usage, and session end',
    description:
      'Body `{events: [...]}` with `{type: "transcript", speaker: "agent"|"user", text, start_ms, end_ms}`, ' +
      '`{type: "gathered_context", data: {...}}`, `{type: "usage", usage: {name: number}}`, `{type: "session_ended"}`.',
  })
  report(@Param('token') token: string, @Body() body: unknown): Promise<{ accepted: number }> {
    return this.sessions.report(token, body);
  }

  @Put('recording')
  @ApiOperation({ operationId: 'uploadAgentRecording', summary: 'Upload the call recording (audio/wav or audio/mpeg)' })
  upload(
    @Param('token') token: string,
    @Headers('content-type') contentType: string | undefined,
    @Headers('content-encoding') contentEncoding: string | undefined,
    @Body() body: unknown,
    @Req() request: FastifyRequest,
  ): Promise<{ stored: true }> {
    // The upload's share of the gateway's memory is held until its body is stored or refused, however early its client
    // leaves. Its token counts as of its admission: a body that takes long to arrive does not outlive it.
    return this.uploads.handle(request.raw, (admittedAt) => this.sessions.uploadRecording(token, contentType, contentEncoding, body, admittedAt));
  }
}
