import { Injectable } from '@nestjs/common';
import { ArtifactKind } from '@app/artifacts';
import { Errors, MAX_RUN_ID } from '@app/common';
import { WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { AuthenticatedKey, keyMayUseWorkflow } from '../auth/authenticated-key';
import { workflowNotFound } from '../workflows/workflow-not-found.error';
import { ListRunsQuery } from './list-runs.query';
import { CancelOutcome, RunCancellation } from './run-cancellation.service';
import { RunPresenter } from './run-presenter.service';
import { RunRecords } from './run-records.service';
import { DownloadLinkDto } from './create-download.dto';
import { decodeIdCursor, pageOf } from '../paging/id-cursor';
import { DEFAULT_PAGE_SIZE } from '../paging/page-query';

/**
 * Reading runs back, scoped to the key's organization and workflows. Records
 * are answered as JSON text (RunView's fields, see `RunPresenter.recordJson`).
 */
@Injectable()
export class WorkflowRunsService {
  constructor(
    private readonly presenter: RunPresenter,
    private readonly cancellation: RunCancellation,
    private readonly records: RunRecords,
    private readonly runs: WorkflowRunStore,
  ) {}

  /** Cancels the run; answers the outcome and the run's record as JSON text afterwards. */
  async cancel(key: AuthenticatedKey, workflowId: number, runId: number): Promise<{ outcome: CancelOutcome; runJson: string }> {
    const outcome = await this.cancellation.cancel(await this.find(key, workflowId, runId));
    return { outcome, runJson: await this.getJson(key, workflowId, runId) };
  }

  /** The run's record as JSON text. */
  async getJson(key: AuthenticatedKey, workflowId: number, runId: number): Promise<string> {
    this.assertWorkflowAccess(key, workflowId);
    const run = await this.records.findVisible({ runId, organizationId: key.organizationId, workflowId });
    if (!run) throw runNotFound();
    return this.presenter.recordJson(run);
  }

  /**
   * A page of the workflow's runs, newest first, as JSON (RunPage's fields).
   * A workflow that is not the organization's answers 404, not an empty
   * list: asked only when the page is empty, so a page of runs costs nothing more.
   */
  async listJson(key: AuthenticatedKey, workflowId: number, query: ListRunsQuery): Promise<Buffer> {
    this.assertWorkflowAccess(key, workflowId);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const rows = await this.records.list({
      workflowId,
      organizationId: key.organizationId,
      status: query.status,
      // Run ids are `bigint`s read as numbers: past MAX_RUN_ID the cursor cannot be one this API issued.
      beforeId: query.cursor ? decodeIdCursor(query.cursor, MAX_RUN_ID) : undefined,
      limit: limit + 1,
    });
    if (rows.length === 0 && !(await this.records.isWorkflowOf(key.organizationId, workflowId))) throw workflowNotFound();
    const page = pageOf(rows, limit);
    return this.presenter.pageJson(page.items, page.nextCursor);
  }

  async createDownload(
    key: AuthenticatedKey,
    workflowId: number,
    runId: number,
    artifact: ArtifactKind,
    lifetimeSeconds: number | undefined,
  ): Promise<DownloadLinkDto> {
    this.assertWorkflowAccess(key, workflowId);
    const run = await this.records.findVisible({ runId, organizationId: key.organizationId, workflowId });
    if (!run) throw runNotFound();
    const stored = artifact === 'recording' ? run.has_recording : run.has_transcript;
    if (!stored) throw Errors.notFound('artifact_not_available', `The run has no ${artifact} (yet)`);
    return this.presenter.downloadUrl(run.id, artifact, lifetimeSeconds);
  }

  /** The whole run, for a change to it; another organization's is not read (as for `getJson`). */
  private async find(key: AuthenticatedKey, workflowId: number, runId: number): Promise<WorkflowRun> {
    this.assertWorkflowAccess(key, workflowId);
    const run = await this.runs.findScoped(runId, workflowId, key.organizationId);
    if (!run) throw runNotFound();
    return run;
  }

  /**
   * A key limited to some workflows gets 403 for any other before a run is
   * read: answered after, 404 or 403 would tell it which run ids exist in
   * workflows it may not see.
   */
  private assertWorkflowAccess(key: AuthenticatedKey, workflowId: number): void {
    if (!keyMayUseWorkflow(key, workflowId)) throw Errors.forbidden('This API key has no access to this workflow');
  }
}

export function runNotFound() {
  return Errors.notFound('run_not_found', 'No run with this id belongs to this workflow');
}
