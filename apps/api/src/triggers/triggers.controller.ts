import { Body, Controller, Param, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { ApiErrors } from '../openapi-docs';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { TriggersAdminService } from './triggers-admin.service';
import { TriggerView, UpdateTriggerDto } from './update-trigger.dto';

/** API triggers as operators manage them. Admin keys only. */
@ApiTags('triggers')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/triggers')
@ApiKeyRoutes('admin')
export class TriggersController {
  constructor(private readonly triggers: TriggersAdminService) {}

  @Patch(':uuid')
  @ApiOperation({ operationId: 'updateTrigger', summary: 'Activate or deactivate an API trigger' })
  @ApiOkResponse({ type: TriggerView })
  @ApiErrors({ 400: '`validation_failed`', 404: "`trigger_not_found`: no API trigger of the organization's has this UUID" })
  update(
    @Param('uuid') uuid: string,
    @Body() body: UpdateTriggerDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TriggerView> {
    return this.triggers.setActive(key.organizationId, uuid, body.is_active);
  }
}
