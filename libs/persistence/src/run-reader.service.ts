import { Injectable } from '@nestjs/common';
import { Batcher } from '@app/common';
import { WorkflowRun } from './entities';
import { WorkflowRunStore } from './workflow-run.store';

/**
 * Reads single runs by id for many concurrent callers (dialer jobs reloading
 * their run, dashboards polling one run each): the reads that arrive together
 * leave as one `id = ANY(...)` query instead of one round trip each. A read
 * always goes to Postgres: nothing is cached.
 */
@Injectable()
export class RunReader {
  private readonly batcher = new Batcher<number, WorkflowRun | null>(
    async (ids) => {
      const byId = new Map((await this.runs.findManyById([...new Set(ids)])).map((run) => [run.id, run]));
      return ids.map((id) => byId.get(id) ?? null);
    },
    { maxBatch: 500, maxInFlight: 4 },
  );

  constructor(private readonly runs: WorkflowRunStore) {}

  findById(runId: number): Promise<WorkflowRun | null> {
    return this.batcher.submit(runId);
  }
}
