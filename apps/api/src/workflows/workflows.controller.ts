import { Body, Controller, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { ParseIdPipe } from '@app/common';
import { ApiKeyRoutes } from '../auth/api-key-routes.decorator';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { CurrentApiKey } from '../auth/current-api-key.decorator';
import { CreateWorkflowDto } from './create-workflow.dto';
import { PublishWorkflowDto } from './publish-workflow.dto';
import { SaveDraftDto } from './save-draft.dto';
import { workflowNotFound } from './workflow-not-found.error';
import { WorkflowPage, WorkflowView } from './workflow-view';
import { PageQuery } from '../paging/page-query';
import { WorkflowsService } from './workflows.service';
import { ApiErrors, ApiIdParam, badId } from '../openapi-docs';

const workflowId = new ParseIdPipe(workflowNotFound);

const ID_PARAM = ApiIdParam('id', 'The workflow');

/** Workflows (agents) and their draft and published definitions. Admin keys only. */
@ApiTags('workflows')
@ApiSecurity('api-key')
@ApiBearerAuth('bearer')
@Controller('api/v1/workflows')
@ApiKeyRoutes('admin')
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Post()
  @ApiOperation({
    operationId: 'createWorkflow',
    summary: 'Create a workflow; its definition becomes the draft (version 1)',
    description: 'Trigger nodes are registered as API triggers; a trigger_path registered to another workflow is a 409.',
  })
  @ApiCreatedResponse({ type: WorkflowView })
  @ApiErrors({ 400: '`invalid_definition` (the definition, with its reason) or `validation_failed` (the rest of the body)', 409: '`trigger_conflict`' })
  create(@Body() body: CreateWorkflowDto, @CurrentApiKey() key: AuthenticatedKey): Promise<WorkflowView> {
    return this.workflows.create(key.organizationId, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listWorkflows',
    summary: "The organization's workflows, newest first, a page at a time",
    description: 'Each item names the versions of its draft and published definitions; read the workflow for their graphs.',
  })
  @ApiOkResponse({ type: WorkflowPage })
  @ApiErrors({ 400: '`validation_failed`: a bad cursor or limit' })
  list(@Query() query: PageQuery, @CurrentApiKey() key: AuthenticatedKey): Promise<WorkflowPage> {
    return this.workflows.list(key.organizationId, query);
  }

  @Get(':id')
  @ApiOperation({ operationId: 'getWorkflow', summary: 'One workflow with its draft, published definition and triggers' })
  @ApiOkResponse({ type: WorkflowView })
  @ApiErrors({ 400: badId(), 404: '`workflow_not_found`' })
  @ID_PARAM
  get(@Param('id', workflowId) id: number, @CurrentApiKey() key: AuthenticatedKey): Promise<WorkflowView> {
    return this.workflows.get(key.organizationId, id);
  }

  @Put(':id/draft')
  @ApiOperation({
    operationId: 'saveWorkflowDraft',
    summary: 'Create or replace the draft',
    description: 'A replaced draft is kept, archived, since runs may reference it; the new draft takes the next version.',
  })
  @ApiOkResponse({ type: WorkflowView })
  @ApiErrors({
    400: badId('or `validation_failed` for the body, `invalid_definition` for the definition'),
    404: '`workflow_not_found`',
    409: '`trigger_conflict`: a trigger_path registered to another workflow',
  })
  @ID_PARAM
  saveDraft(
    @Param('id', workflowId) id: number,
    @Body() body: SaveDraftDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<WorkflowView> {
    return this.workflows.saveDraft(key.organizationId, id, body.definition);
  }

  @Post(':id/publish')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'publishWorkflow',
    summary: 'Publish the draft; the previously published definition is archived',
    description:
      '409 `no_draft` when the workflow has no draft; 409 `draft_changed` when a `version` is given and the draft is no longer that version.',
  })
  @ApiOkResponse({ type: WorkflowView })
  @ApiErrors({ 400: badId(), 404: '`workflow_not_found`', 409: '`no_draft`, `draft_changed`' })
  @ID_PARAM
  publish(
    @Param('id', workflowId) id: number,
    @Body() body: PublishWorkflowDto,
    @CurrentApiKey() key: AuthenticatedKey,
  ): Promise<WorkflowView> {
    return this.workflows.publish(key.organizationId, id, body.version);
  }
}
