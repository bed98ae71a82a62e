import { Body, Controller, Param, Patch, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { RequireRole } from '../auth/require-role.decorator';
import { TriggersAdminService } from './triggers-admin.service';
import { TriggerView, UpdateTriggerDto } from './update-trigger.dto';

/** API triggers as operators manage them. Admin keys only. */
@ApiTags('triggers')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/triggers')
@UseGuards(ApiKeyGuard)
@RequireRole('admin')
export class TriggersController {
  constructor(private readonly triggers: TriggersAdminService) {}

  @Patch(':uuid')
  @ApiOperation({ operationId: 'updateTrigger', summary: 'Activate or deactivate an API trigger' })
  @ApiOkResponse({ type: TriggerView })
  update(
    @Param('uuid') uuid: string,
    @Body() body: UpdateTriggerDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TriggerView> {
    return this.triggers.setActive(key.organizationId, uuid, body.is_active);
  }
}
