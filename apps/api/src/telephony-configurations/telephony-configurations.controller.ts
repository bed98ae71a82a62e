import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
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
import type { CredentialsCheck } from '@app/telephony';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { CreateTelephonyConfigurationDto } from './create-telephony-configuration.dto';
import { telephonyConfigurationNotFound } from './telephony-configuration-not-found.error';
import { TelephonyConfigurationPage, TelephonyConfigurationView } from './telephony-configuration-view';
import { PageQuery } from '../paging/page-query';
import { TelephonyConfigurationsService } from './telephony-configurations.service';
import { UpdateTelephonyConfigurationDto } from './update-telephony-configuration.dto';
import { ApiErrors, ApiIdParam, badId } from '../openapi-docs';

const configurationId = new ParseIdPipe(telephonyConfigurationNotFound);
const NOT_FOUND = '`telephony_configuration_not_found`';

const ID_PARAM = ApiIdParam('id', 'The telephony configuration');

/** The organization's carrier accounts. Admin keys only; credentials go in, never out. */
@ApiTags('telephony-configurations')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/telephony-configurations')
@ApiKeyRoutes('admin')
export class TelephonyConfigurationsController {
  constructor(private readonly configurations: TelephonyConfigurationsService) {}

  @Post()
  @ApiOperation({
    operationId: 'createTelephonyConfiguration',
    summary: 'Add a carrier account',
    description: "The organization's first configuration becomes its default for outbound calls.",
  })
  @ApiCreatedResponse({ type: TelephonyConfigurationView })
  @ApiErrors({
    400: '`validation_failed`: the body, an unknown provider, or credentials or settings the provider refuses',
    502: '`carrier_unreachable`: the carrier could not be asked to check the credentials',
  })
  create(
    @Body() body: CreateTelephonyConfigurationDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TelephonyConfigurationView> {
    return this.configurations.create(key.organizationId, body);
  }

  @Get()
  @ApiOperation({ operationId: 'listTelephonyConfigurations', summary: "The organization's carrier accounts, newest first, a page at a time" })
  @ApiOkResponse({ type: TelephonyConfigurationPage })
  @ApiErrors({ 400: '`validation_failed`: a bad cursor or limit' })
  list(@Query() query: PageQuery, @CurrentApiKey() key: AuthenticatedKey): Promise<TelephonyConfigurationPage> {
    return this.configurations.list(key.organizationId, query);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getTelephonyConfiguration', summary: 'One carrier account' })
  @ApiOkResponse({ type: TelephonyConfigurationView })
  @ApiErrors({ 400: badId(), 404: NOT_FOUND })
  @ID_PARAM
  get(@Param('id', configurationId) id: number, @CurrentApiKey() key: AuthenticatedKey): Promise<TelephonyConfigurationView> {
    return this.configurations.get(key.organizationId, id);
  }

  @Patch(':id')
  @ApiOperation({ operationId: 'updateTelephonyConfiguration', summary: 'Change any subset of a carrier account' })
  @ApiOkResponse({ type: TelephonyConfigurationView })
  @ApiErrors({
    400: badId('or `validation_failed` for the body (credentials or settings the provider refuses included)'),
    404: NOT_FOUND,
    409: '`configuration_in_use`: a change of `provider`, or credentials of another carrier account, while runs placed through it are not complete',
    502: '`carrier_unreachable`: the carrier could not be asked to check new credentials',
    503: '`credentials_unreadable`: the stored credentials cannot be read with this SECRETS_KEY; store them again',
  })
  @ID_PARAM
  update(
    @Param('id', configurationId) id: number,
    @Body() body: UpdateTelephonyConfigurationDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TelephonyConfigurationView> {
    return this.configurations.update(key.organizationId, id, body);
  }

  @Post(':id/verify')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'verifyTelephonyConfiguration',
    summary: 'Ask the carrier whether the stored credentials work',
    description: 'Answers `{ok: true}` or `{ok: false, reason, message}`; 502 `carrier_unreachable` when the carrier cannot be asked.',
  })
  @ApiErrors({
    400: badId(),
    404: NOT_FOUND,
    502: '`carrier_unreachable`: the carrier could not be asked; retry',
    503: '`credentials_unreadable`: the stored credentials cannot be read with this SECRETS_KEY; store them again',
  })
  @ID_PARAM
  verify(@Param('id', configurationId) id: number, @CurrentApiKey() key: AuthenticatedKey): Promise<CredentialsCheck> {
    return this.configurations.verify(key.organizationId, id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'deleteTelephonyConfiguration',
    summary: 'Delete a carrier account',
    description:
      'Refused with 409 `configuration_in_use` while runs placed through it are not complete (`is_completed` false): ' +
      'their hang-up, carrier webhooks and recording need its credentials. ' +
      'Deleting the default leaves the organization without one: triggers that name no configuration answer ' +
      '400 `telephony_not_configured` until another is marked with is_default_outbound.',
  })
  @ApiNoContentResponse()
  @ApiErrors({ 400: badId(), 404: NOT_FOUND, 409: '`configuration_in_use`: runs placed through it are not complete' })
  @ID_PARAM
  remove(@Param('id', configurationId) id: number, @CurrentApiKey() key: AuthenticatedKey): Promise<void> {
    return this.configurations.remove(key.organizationId, id);
  }
}
