import { Injectable } from '@nestjs/common';
import { DataSource, FindOptionsWhere, LessThan } from 'typeorm';
import { ArtifactKind } from '@app/artifacts';
import { Errors } from '@app/common';
import { RunReader, WorkflowRun } from '@app/persistence';
import { AuthenticatedKey, keyMayUseWorkflow } from '../auth/authenticated-key';
import { ListRunsQuery } from './list-runs.query';
import { CancelOutcome, RunCancellation } from './run-cancellation.service';
import { RunPresenter } from './run-presenter.service';
import { RunPage, RunView } from './run-view';
import { DownloadLinkDto } from './create-download.dto';

const DEFAULT_PAGE_SIZE = 50;

/** Reading runs back, scoped to the key's organization and workflows. */
@Injectable()
export class WorkflowRunsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly presenter: RunPresenter,
    private readonly cancellation: RunCancellation,
    /** Concurrent reads of single runs (dashboards polling) go to Postgres as one query. */
    private readonly reads: RunReader,
  ) {}

  async cancel(key: AuthenticatedKey, workflowId: number, runId: number): Promise<{ outcome: CancelOutcome; run: RunView }> {
    const outcome = await this.cancellation.cancel(await this.find(key, workflowId, runId));
    return { outcome, run: await this.get(key, workflowId, runId) };
  }

  async get(key: AuthenticatedKey, workflowId: number, runId: number): Promise<RunView> {
    return this.presenter.present(await this.find(key, workflowId, runId));
  }

  async list(key: AuthenticatedKey, workflowId: number, query: ListRunsQuery): Promise<RunPage> {
    this.assertWorkflowAccess(key, workflowId);
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const where: FindOptionsWhere<WorkflowRun> = { workflowId, organizationId: key.organizationId };
    if (query.status) where.status = query.status;
    if (query.cursor) where.id = LessThan(decodeCursor(query.cursor));
    const rows = await this.dataSource
      .getRepository(WorkflowRun)
      .find({ where, order: { id: 'DESC' }, take: limit + 1 });
    const page = rows.slice(0, limit);
    return {
      runs: page.map((run) => this.presenter.present(run)),
      next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].id) : null,
    };
  }

  async createDownload(
    key: AuthenticatedKey,
    workflowId: number,
    runId: number,
    artifact: ArtifactKind,
    lifetimeSeconds: number | undefined,
  ): Promise<DownloadLinkDto> {
    const run = await this.find(key, workflowId, runId);
    const stored = artifact === 'recording' ? run.recordingKey : run.transcriptKey;
    if (!stored) throw Errors.notFound('artifact_not_available', `The run has no ${artifact} (yet)`);
    return this.presenter.downloadUrl(run.id, artifact, lifetimeSeconds);
  }

  private async find(key: AuthenticatedKey, workflowId: number, runId: number): Promise<WorkflowRun> {
    const run = await this.reads.findById(runId);
    if (!run || run.workflowId !== workflowId || run.organizationId !== key.organizationId) throw runNotFound();
    this.assertWorkflowAccess(key, workflowId);
    return run;
  }

  private assertWorkflowAccess(key: AuthenticatedKey, workflowId: number): void {
    if (!keyMayUseWorkflow(key, workflowId)) throw Errors.forbidden('This API key has no access to this workflow');
  }
}

export function runNotFound() {
  return Errors.notFound('run_not_found', 'No run with this id belongs to this workflow');
}

function encodeCursor(id: number): string {
  return Buffer.from(String(id)).toString('base64url');
}

/** Run ids are Postgres integers: a larger one would fail the query (a 500) instead of the request (a 400). */
const MAX_RUN_ID = 2_147_483_647;

function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const id = /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : NaN;
  if (!(id >= 1 && id <= MAX_RUN_ID)) throw Errors.validation('cursor is not one this API issued');
  return id;
}
