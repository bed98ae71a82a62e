import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ArtifactsModule } from '@app/artifacts';
import { HttpExceptionFilter } from '@app/common';
import { AppConfig, ConfigModule } from '@app/config';
import { HealthModule } from '@app/health';
import { PersistenceModule } from '@app/persistence';
import { QueueModule } from '@app/queue';
import { TelephonyModule } from '@app/telephony';
import { TemplatingModule } from '@app/templating';
import { CallEventApplier } from './call-events/call-event-applier.service';
import { CallEventsProcessor } from './call-events/call-events.processor';
import { RunArtifactsCollector } from './call-events/run-artifacts-collector.service';
import { CallPlacer } from './calls/call-placer.service';
import { CarrierPause } from './calls/carrier-pause';
import { DefinitionPicker } from './calls/definition-picker.service';
import { PlaceCallProcessor } from './calls/place-call.processor';
import { ConfigurationLookup } from './lookups/configuration-lookup.service';
import { GroupedRunWrites } from './runs/grouped-run-writes.service';
import { DialAdmission } from './pacing/dial-admission';
import { AutovacuumCheck } from './recovery/autovacuum-check.service';
import { RunDispatcher } from './recovery/run-dispatcher.service';
import { RunReaper } from './recovery/run-reaper.service';
import { IdempotencyKeySweeper } from './recovery/idempotency-key-sweeper.service';
import { WorkerShutdown } from './worker-shutdown.service';

/** The dialer worker: places calls and applies carrier events. Its only HTTP is health. */
@Module({})
export class DialerModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DialerModule,
      imports: [
        ConfigModule.forRoot(config),
        PersistenceModule,
        QueueModule.forRoot('worker'),
        TelephonyModule,
        TemplatingModule,
        ArtifactsModule,
        HealthModule.forRoot(['postgres', 'redis']),
      ],
      providers: [
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
        GroupedRunWrites,
        ConfigurationLookup,
        DialAdmission,
        DefinitionPicker,
        CallPlacer,
        CarrierPause,
        PlaceCallProcessor,
        RunArtifactsCollector,
        CallEventApplier,
        CallEventsProcessor,
        RunDispatcher,
        RunReaper,
        IdempotencyKeySweeper,
        AutovacuumCheck,
        WorkerShutdown,
      ],
    };
  }
}
