import { Body, Controller, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
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

/** The 200, and the header that marks a replay. */
const INITIATED = {
  type: TriggerCallResponseDto,
  headers: {
    'Idempotent-Replayed': {
      description: "`true` when this answers an earlier request's run (the same Idempotency-Key and body); absent otherwise",
      schema: { type: 'string' as const, enum: ['true'] },
    },
  },
};

const TRIGGER_ERRORS = ApiErrors({
  400: '`validation_failed` (the body, with `details` per field), `invalid_json` (not JSON, not UTF-8, or a `__proto__` key) or `telephony_not_configured`',
  401: '`unauthorized`: no API key, or one that is unknown or revoked',
  403: "`forbidden`: the key is another organization's, or limited to other agents",
  404: '`trigger_not_found`, `agent_not_published`, `telephony_configuration_not_found`',
  409: '`idempotency_request_in_flight`: the Idempotency-Key is held by a request still being processed; retry it',
  413: '`payload_too_large`',
  415: '`unsupported_media_type`: send JSON',
  422: '`idempotency_key_reused`: the same Idempotency-Key with another body or URL',
  414: '`uri_too_long`: a path segment over 100 characters',
  503:
    '`service_unavailable` with `Retry-After: 1`: the database is away, or holds the inserts (more than 10,000 triggers waiting, ' +
    'or one waiting 10 s); nothing was stored: retry (with the same Idempotency-Key)',
});

/** The two call-initiation URLs of an API trigger: published agent, and latest draft. */
@ApiTags('public')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
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
  @ApiOkResponse(INITIATED)
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
  @ApiOkResponse(INITIATED)
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
