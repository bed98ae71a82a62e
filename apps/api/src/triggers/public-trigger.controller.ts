import { Body, Controller, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { RunEnvironment } from '@app/persistence';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';
import { TriggerCallService } from './trigger-call.service';
import { ApiErrors } from '../openapi-docs';

const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  required: false,
  description:
    'Makes retries safe: a repeat with the same key and body within 24 h answers the first run again ' +
    '(Idempotent-Replayed: true), also when it races the first; the same key with another body is 422.',
};

/** What 200 promises, and where the call's outcome shows. */
const INITIATE_DESCRIPTION =
  '200 means the run is stored and will be dialed once; the call itself is placed after the answer, and whether it ' +
  'went through shows in the run record (`status`, `end_reason`), never as an error of this request.';

const TRIGGER_ERRORS = ApiErrors({
  400: '`validation_failed` (the body, with `details` per field) or `telephony_not_configured`',
  401: '`unauthorized`: no API key, or one that is unknown or revoked',
  403: "`forbidden`: the key is another organization's, or limited to other agents",
  404: '`trigger_not_found`, `agent_not_published`, `telephony_configuration_not_found`',
  409: '`idempotency_request_in_flight`',
  413: '`payload_too_large`',
  415: '`unsupported_media_type`: send JSON',
  422: '`idempotency_key_reused`: the same Idempotency-Key with another body or URL',
  503: '`service_unavailable`: the database is away; retry (with the same Idempotency-Key)',
});

/** The two call-initiation URLs of an API trigger: published agent, and latest draft. */
@ApiTags('public')
@ApiSecurity('api-key')
@Controller('api/v1/public/agent')
@ApiKeyRoutes()
export class PublicTriggerController {
  constructor(private readonly calls: TriggerCallService) {}

  @Post('test/:uuid')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'initiateTestCall',
    summary: 'Start a call with the latest draft of the agent',
    description: INITIATE_DESCRIPTION,
  })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: TriggerCallResponseDto })
  @TRIGGER_ERRORS
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
  @ApiOperation({ operationId: 'initiateCall', summary: 'Start a call with the published agent', description: INITIATE_DESCRIPTION })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: TriggerCallResponseDto })
  @TRIGGER_ERRORS
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
