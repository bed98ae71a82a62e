import { Body, Controller, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';
import { TriggerCallService } from './trigger-call.service';

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
  @ApiOkResponse({ type: TriggerCallResponseDto })
  initiateTest(
    @Param('uuid') uuid: string,
    @Body() body: TriggerCallDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TriggerCallResponseDto> {
    return this.calls.trigger(key, uuid, 'test', body);
  }

  @Post(':uuid')
  @HttpCode(200)
  @ApiOperation({ operationId: 'initiateCall', summary: 'Start a call with the published agent' })
  @ApiOkResponse({ type: TriggerCallResponseDto })
  initiate(
    @Param('uuid') uuid: string,
    @Body() body: TriggerCallDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<TriggerCallResponseDto> {
    return this.calls.trigger(key, uuid, 'production', body);
  }
}
