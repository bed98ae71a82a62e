import { Injectable } from '@nestjs/common';
import { DataSource, In } from 'typeorm';
import { WorkflowDefinition, WorkflowRun, triggerPathsOf } from '@app/persistence';

/**
 * Chooses the definition a run executes: a test run takes the latest draft
 * when there is one, else the published version; a production run takes the
 * published version. The definition must still contain the run's trigger.
 */
@Injectable()
export class DefinitionPicker {
  constructor(private readonly dataSource: DataSource) {}

  async pick(run: WorkflowRun): Promise<WorkflowDefinition | null> {
    const statuses = run.environment === 'test' ? ['draft', 'published'] : ['published'];
    const candidates = await this.dataSource
      .getRepository(WorkflowDefinition)
      .findBy({ workflowId: run.workflowId, status: In(statuses) });
    const chosen =
      candidates.find((definition) => definition.status === statuses[0]) ??
      candidates.find((definition) => definition.status === statuses[1]) ??
      null;
    if (!chosen) return null;
    if (run.triggerUuid && !triggerPathsOf(chosen.definition).includes(run.triggerUuid)) return null;
    return chosen;
  }
}
