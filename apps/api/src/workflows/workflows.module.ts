import { Module } from '@nestjs/common';
import { TemplatingModule } from '@app/templating';
import { DefinitionValidator } from './definition-validator.service';
import { WorkflowPresenter } from './workflow-presenter.service';
import { WorkflowsController } from './workflows.controller';
import { WorkflowsService } from './workflows.service';

@Module({
  imports: [TemplatingModule],
  controllers: [WorkflowsController],
  providers: [WorkflowsService, DefinitionValidator, WorkflowPresenter],
})
export class WorkflowsModule {}
