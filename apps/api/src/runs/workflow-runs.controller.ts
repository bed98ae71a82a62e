import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Errors, MAX_RUN_ID, ParseIdPipe } from '@app/common';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { CreateDownloadDto, DownloadLinkDto } from './create-download.dto';
import { ListRunsQuery } from './list-runs.query';
import { RunPage, RunView } from './run-view';
import { runNotFound, WorkflowRunsService } from './workflow-runs.service';
import { workflowNotFound } from '../workflows/workflow-not-found.error';
import { ApiErrors, ApiIdParam, badId } from '../openapi-docs';

/** Run records are answered as JSON already written (see `RunPresenter.recordJson` and `pageJson`). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const workflowId = new ParseIdPipe(() => Errors.notFound('run_not_found', 'No run belongs to this workflow'));
const listedWorkflowId = new ParseIdPipe(workflowNotFound);
const runId = new ParseIdPipe(runNotFound, MAX_RUN_ID);
const WORKFLOW_ID = ApiIdParam('workflow_id', 'The workflow (agent) the run belongs to');
const RUN_ID = ApiIdParam('run_id', 'The run, as the trigger answered it (`workflow_run_id`)');
const DATABASE_AWAY = '`service_unavailable`: the database is away; retry';

/** Run records: one run, a workflow's runs for dashboards, and download links. */
@ApiTags('runs')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/workflow/:workflow_id/runs')
@ApiKeyRoutes()
export class WorkflowRunsController {
  constructor(private readonly runs: WorkflowRunsService) {}

  @Get()
  @Header('content-type', JSON_CONTENT_TYPE)
  @ApiOperation({ operationId: 'listWorkflowRuns', summary: 'Runs of a workflow, newest first' })
  @ApiOkResponse({ type: RunPage })
  @WORKFLOW_ID
  @ApiErrors({
    400: badId('or a bad cursor, limit or status'),
    401: '`unauthorized`',
    403: '`forbidden`',
    404: '`workflow_not_found`',
    503: DATABASE_AWAY,
  })
  list(
    @Param('workflow_id', listedWorkflowId) workflow: number,
    @Query() query: ListRunsQuery,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<Buffer> {
    return this.runs.listJson(key, workflow, query);
  }

  @Get(':run_id')
  @Header('content-type', JSON_CONTENT_TYPE)
  @ApiOperation({ operationId: 'getWorkflowRun', summary: 'The record of one call' })
  @ApiOkResponse({ type: RunView })
  @WORKFLOW_ID
  @RUN_ID
  @ApiErrors({
    400: badId(),
    401: '`unauthorized`',
    403: '`forbidden`: the key is limited to other agents',
    404: '`run_not_found`',
    503: DATABASE_AWAY,
  })
  get(
    @Param('workflow_id', workflowId) workflow: number,
    @Param('run_id', runId) run: number,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<string> {
    return this.runs.getJson(key, workflow, run);
  }

  @Post(':run_id/downloads')
  @HttpCode(200)
  @ApiOperation({ operationId: 'createRunDownload', summary: 'A time-limited public URL for a recording or transcript' })
  @ApiOkResponse({ type: DownloadLinkDto })
  @WORKFLOW_ID
  @RUN_ID
  @ApiErrors({
    400: badId('or an unknown artifact, or a lifetime outside 1 to 604800 seconds'),
    401: '`unauthorized`',
    403: '`forbidden`: the key is limited to other agents',
    404: '`run_not_found`, or `artifact_not_available` until the artifact is stored',
    503: DATABASE_AWAY,
  })
  createDownload(
    @Param('workflow_id', workflowId) workflow: number,
    @Param('run_id', runId) run: number,
    @Body() body: CreateDownloadDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<DownloadLinkDto> {
    return this.runs.createDownload(key, workflow, run, body.artifact, body.expires_in_seconds ?? undefined);
  }

  @Post(':run_id/cancel')
  @HttpCode(200)
  @Header('content-type', JSON_CONTENT_TYPE)
  @ApiOperation({
    operationId: 'cancelWorkflowRun',
    summary: 'Cancel a run that is queued or waiting, or hang up a ringing call',
    description:
      'A queued run ends `canceled` at once (200), and a run canceled already answers 200 again. A dialing or ' +
      'ringing call is hung up through its carrier (202); the run ends `canceled` when the carrier confirms. An ' +
      'answered or finished run answers 409; 502 `carrier_unreachable` when the carrier cannot be asked to hang up.',
  })
  @ApiOkResponse({ type: RunView })
  @ApiAcceptedResponse({ type: RunView })
  @WORKFLOW_ID
  @RUN_ID
  @ApiErrors({
    400: badId(),
    401: '`unauthorized`',
    403: '`forbidden`: the key is limited to other agents',
    404: '`run_not_found`',
    409: '`run_not_cancelable`: answered or finished, its call id not known yet, or the carrier refused the hang-up',
    502: '`carrier_unreachable`: the carrier could not be asked to hang up; retry',
    503: `${DATABASE_AWAY}; or \`credentials_unreadable\`: the configuration's stored credentials cannot be read with this SECRETS_KEY`,
  })
  async cancel(
    @Param('workflow_id', workflowId) workflow: number,
    @Param('run_id', runId) run: number,
    @CurrentApiKey() key: AuthenticatedKey,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string> {
    const result = await this.runs.cancel(key, workflow, run);
    if (result.outcome === 'hangup_requested') void reply.status(202);
    return result.runJson;
  }
}
