import { Module } from '@nestjs/common';
import { TelephonyModule } from '@app/telephony';
import { CanceledRunInstants } from './canceled-run-instants.service';
import { RunCancellation } from './run-cancellation.service';
import { RunPresenter } from './run-presenter.service';
import { RunRecords } from './run-records.service';
import { WorkflowRunsController } from './workflow-runs.controller';
import { WorkflowRunsService } from './workflow-runs.service';

@Module({
  imports: [TelephonyModule],
  controllers: [WorkflowRunsController],
  providers: [WorkflowRunsService, RunPresenter, RunRecords, RunCancellation, CanceledRunInstants],
  exports: [RunPresenter],
})
export class RunsModule {}
