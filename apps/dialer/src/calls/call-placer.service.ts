import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { CarrierError, CredentialsCipher, TelephonyProviders } from '@app/telephony';
import { PromptRenderer, renderDefinition } from '@app/templating';
import { DefinitionPicker } from './definition-picker.service';

export type PlaceOutcome = 'placed' | 'skipped' | 'failed';

/**
 * Turns a queued run into one carrier call. The run is claimed with a
 * conditional `queued → dialing` update before the carrier is asked, so a
 * duplicated or retried job finds it claimed and does nothing.
 */
@Injectable()
export class CallPlacer {
  private readonly logger = new Logger(CallPlacer.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: WorkflowRunStore,
    private readonly definitions: DefinitionPicker,
    private readonly renderer: PromptRenderer,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
  ) {}

  async place(runId: number): Promise<PlaceOutcome> {
    const run = await this.runs.findById(runId);
    if (!run || run.status !== 'queued') return 'skipped';

    const config = run.telephonyConfigurationId
      ? await this.dataSource
          .getRepository(TelephonyConfiguration)
          .findOneBy({ id: run.telephonyConfigurationId, organizationId: run.organizationId })
      : null;
    if (!config || !this.providers.has(config.provider)) {
      return this.fail(run, 'telephony_configuration_missing', 'The telephony configuration no longer exists');
    }
    const fromNumber = config.fromNumbers.length ? config.fromNumbers[run.id % config.fromNumbers.length] : null;
    if (!fromNumber) return this.fail(run, 'no_from_number', 'The telephony configuration has no from number');

    const definition = await this.definitions.pick(run);
    if (!definition) {
      return this.fail(run, 'definition_not_found', 'No definition of the workflow contains this trigger any more');
    }
    const agent = await renderDefinition(this.renderer, definition.definition, { initial_context: run.initialContext });
    if (agent.missingPaths.length) await this.runs.setLog(run.id, 'template_missing_paths', agent.missingPaths);

    const claimed = await this.runs.transition(run.id, 'dialing', 'dialer.dialing', {
      definitionId: definition.id,
      fromNumber,
    });
    if (!claimed) return 'skipped';

    const provider = this.providers.get(config.provider);
    try {
      const result = await provider.placeCall({
        runId: run.id,
        organizationId: run.organizationId,
        to: run.phoneNumber,
        from: fromNumber,
        credentials: config.credentialsEncrypted ? this.cipher.decrypt(config.credentialsEncrypted) : null,
        settings: config.settings,
        maxCallDurationSeconds: config.maxCallDurationSeconds,
      });
      await this.runs.recordProviderCallId(run.id, result.providerCallId);
      return 'placed';
    } catch (error) {
      return this.handleDialError(run, error);
    }
  }

  private async handleDialError(run: WorkflowRun, error: unknown): Promise<PlaceOutcome> {
    if (error instanceof CarrierError && error.permanent) {
      await this.runs.transition(
        run.id,
        'failed',
        'carrier.rejected',
        { endReason: error.reason, endedAt: new Date() },
        { message: error.message, carrier_code: error.carrierCode ?? null },
      );
      return 'failed';
    }
    if (error instanceof CarrierError && error.notProcessed) {
      // The carrier did nothing: hand the run back so the job's retry may dial it.
      await this.runs.transition(run.id, 'queued', 'dialer.retry', {}, { message: error.message, reason: error.reason });
      throw error;
    }
    // The carrier may or may not have placed the call: never dial again.
    this.logger.warn({ run_id: run.id, err: error }, 'dial outcome unknown');
    await this.runs.transition(
      run.id,
      'failed',
      'dialer.outcome_unknown',
      { endReason: 'dial_outcome_unknown', endedAt: new Date() },
      { message: error instanceof Error ? error.message : String(error) },
    );
    return 'failed';
  }

  private async fail(run: WorkflowRun, reason: string, message: string): Promise<PlaceOutcome> {
    await this.runs.transition(run.id, 'failed', 'dialer.failed', { endReason: reason, endedAt: new Date() }, { message });
    return 'failed';
  }
}
