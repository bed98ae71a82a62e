import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ARTIFACT_STORAGE, ArtifactStorage, artifactKey } from '@app/artifacts';
import { TelephonyConfiguration, WorkflowDefinition, WorkflowRunStore } from '@app/persistence';
import { TelephonyProviders } from '@app/telephony';
import { PromptRenderer, renderDefinition } from '@app/templating';

/**
 * Stores a completed call's transcript and recording, then marks the run
 * complete. Safe to repeat: keys are fixed per run and the final update only
 * applies to a completed run that is not complete yet.
 */
@Injectable()
export class RunArtifactsCollector {
  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: WorkflowRunStore,
    private readonly providers: TelephonyProviders,
    private readonly renderer: PromptRenderer,
    @Inject(ARTIFACT_STORAGE) private readonly storage: ArtifactStorage,
  ) {}

  async collect(runId: number): Promise<void> {
    const run = await this.runs.findById(runId);
    if (!run || run.status !== 'completed' || run.isCompleted || !run.providerCallId) return;

    const [config, definition] = await Promise.all([
      run.telephonyConfigurationId
        ? this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: run.telephonyConfigurationId })
        : null,
      run.definitionId ? this.dataSource.getRepository(WorkflowDefinition).findOneBy({ id: run.definitionId }) : null,
    ]);
    const provider = this.providers.get(run.provider ?? config?.provider ?? 'sandbox');
    const agent = definition
      ? await renderDefinition(this.renderer, definition.definition, { initial_context: run.initialContext })
      : null;

    const artifacts = await provider.collectArtifacts({
      runId: run.id,
      providerCallId: run.providerCallId,
      settings: config?.settings ?? {},
      durationSeconds: run.durationSeconds ?? 0,
      agentOpening: agent?.opening ?? '',
    });

    const transcriptKey = artifactKey(run.id, 'transcript', 'json');
    await this.storage.put(
      transcriptKey,
      Buffer.from(JSON.stringify({ run_id: run.id, turns: artifacts.transcript }, null, 2)),
      'application/json',
    );
    let recordingKey: string | null = null;
    if (artifacts.recording) {
      recordingKey = artifactKey(run.id, 'recording', 'wav');
      await this.storage.put(recordingKey, artifacts.recording.body, artifacts.recording.contentType);
    }
    await this.runs.completeArtifacts(run.id, { transcriptKey, recordingKey });
  }
}
