import { DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DependenciesHealth } from './dependencies.health';
import { HealthController, READINESS_DEPENDENCIES, ReadinessDependency } from './health.controller';

/** Health endpoints shared by the API and the dialer. Needs the persistence and queue modules. */
@Module({})
export class HealthModule {
  /** `readiness`: what `/health/ready` requires of the app's dependencies (the API: Postgres; the dialer: both). */
  static forRoot(readiness: readonly ReadinessDependency[]): DynamicModule {
    return {
      module: HealthModule,
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [DependenciesHealth, { provide: READINESS_DEPENDENCIES, useValue: readiness }],
    };
  }
}
