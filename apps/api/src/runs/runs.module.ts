import { Module } from '@nestjs/common';
import { RunPresenter } from './run-presenter.service';
import { WorkflowRunsController } from './workflow-runs.controller';
import { WorkflowRunsService } from './workflow-runs.service';

@Module({
  controllers: [WorkflowRunsController],
  providers: [WorkflowRunsService, RunPresenter],
  exports: [RunPresenter],
})
export class RunsModule {}
