import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import { ParseIdPipe } from '@app/common';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { apiKeyNotFound } from './api-key-not-found.error';
import { ApiKeyPage } from './api-key-view';
import { PageQuery } from '../paging/page-query';
import { ApiKeysService } from './api-keys.service';
import { CreateApiKeyDto } from './create-api-key.dto';
import { CreatedApiKeyView } from './created-api-key-view';
import { ApiErrors, ApiIdParam, badId } from '../openapi-docs';

const ID_PARAM = ApiIdParam('id', 'The API key');

/** The organization's API keys. Admin keys only. */
@ApiTags('api-keys')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/api-keys')
@ApiKeyRoutes('admin')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @ApiOperation({ operationId: 'createApiKey', summary: 'Issue an API key (the key is shown once)' })
  @ApiCreatedResponse({ type: CreatedApiKeyView })
  @ApiErrors({ 400: '`validation_failed`', 404: "`workflow_not_found`: a `workflow_ids` entry that is not one of the organization's workflows" })
  create(@Body() body: CreateApiKeyDto, @CurrentApiKey() key: AuthenticatedKey): Promise<CreatedApiKeyView> {
    return this.apiKeys.create(key.organizationId, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listApiKeys',
    summary: "The organization's API keys, revoked ones included, without secrets, newest first, a page at a time",
  })
  @ApiOkResponse({ type: ApiKeyPage })
  @ApiErrors({ 400: '`validation_failed`: a bad cursor or limit' })
  list(@Query() query: PageQuery, @CurrentApiKey() key: AuthenticatedKey): Promise<ApiKeyPage> {
    return this.apiKeys.list(key.organizationId, query);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    description:
      "The key answers 401 at once on this replica and within 5 seconds on every other one. The organization's last " +
      'admin key cannot be revoked (409 `last_admin_key`): create another first.',
  })
  @ApiNoContentResponse()
  @ApiErrors({ 400: badId(), 404: '`api_key_not_found`', 409: "`last_admin_key`: the organization's last admin key" })
  @ID_PARAM
  revoke(@Param('id', new ParseIdPipe(apiKeyNotFound)) id: number, @CurrentApiKey() key: AuthenticatedKey): Promise<void> {
    return this.apiKeys.revoke(key.organizationId, id);
  }
}
