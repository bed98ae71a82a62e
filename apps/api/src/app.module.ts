import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ArtifactsModule } from '@app/artifacts';
import { createValidationPipe, HttpExceptionFilter } from '@app/common';
import { AppConfig, ConfigModule } from '@app/config';
import { HealthModule } from '@app/health';
import { PersistenceModule } from '@app/persistence';
import { QueueModule } from '@app/queue';
import { TelephonyModule } from '@app/telephony';
import { TemplatingModule } from '@app/templating';
import { AuthModule } from './auth/auth.module';
import { FEATURE_MODULES } from './feature-modules';
import { TriggerLookupsModule } from './triggers/trigger-lookups.module';

/** The HTTP gateway: management API, public trigger API, run records and downloads. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        PersistenceModule,
        QueueModule.forRoot('producer'),
        TelephonyModule,
        TemplatingModule,
        ArtifactsModule,
        AuthModule,
        TriggerLookupsModule,
        // A trigger does not need Redis (its run is dialed once Redis is back): readiness is Postgres alone.
        HealthModule.forRoot(['postgres']),
        ...FEATURE_MODULES,
      ],
      providers: [
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
      ],
    };
  }
}
