import { Body, Controller, Headers, HttpCode, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { RunEnvironment } from '@app/persistence';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';
import { TriggerCallService } from './trigger-call.service';

const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  required: false,
  description:
    'Makes retries safe: a repeat with the same key and body within 24 h answers the first run again ' +
    '(Idempotent-Replayed: true), also when it races the first; the same key with another body is 422.',
};

/** The two call-initiation URLs of an API trigger: published agent, and latest draft. */
@ApiTags('public')
@ApiSecurity('api-key')
@Controller('api/v1/public/agent')
@UseGuards(ApiKeyGuard)
export class PublicTriggerController {
  constructor(private readonly calls: TriggerCallService) {}

  @Post('test/:uuid')
  @HttpCode(200)
  @ApiOperation({ operationId: 'initiateTestCall', summary: 'Start a call with the latest draft of the agent' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: TriggerCallResponseDto })
  initiateTest(
    @Param('uuid') uuid: string,
    @Body() body: TriggerCallDto,
    @CurrentApiKey() key: AuthenticatedKey,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TriggerCallResponseDto> {
    return this.initiate(key, uuid, 'test', body, idempotencyKey, reply);
  }

  @Post(':uuid')
  @HttpCode(200)
  @ApiOperation({ operationId: 'initiateCall', summary: 'Start a call with the published agent' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: TriggerCallResponseDto })
  initiateProduction(
    @Param('uuid') uuid: string,
    @Body() body: TriggerCallDto,
    @CurrentApiKey() key: AuthenticatedKey,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<TriggerCallResponseDto> {
    return this.initiate(key, uuid, 'production', body, idempotencyKey, reply);
  }

  private async initiate(
    key: AuthenticatedKey,
    uuid: string,
    environment: RunEnvironment,
    body: TriggerCallDto,
    idempotencyKey: string | undefined,
    reply: FastifyReply,
  ): Promise<TriggerCallResponseDto> {
    const outcome = await this.calls.trigger(key, uuid, environment, body, IdempotencyKeys.validate(idempotencyKey));
    if (outcome.replayed) void reply.header('idempotent-replayed', 'true');
    return outcome.response;
  }
}
