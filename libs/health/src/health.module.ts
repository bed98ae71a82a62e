import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DependenciesHealth } from './dependencies.health';
import { HealthController } from './health.controller';

/** Health endpoints shared by the API and the dialer. Needs the persistence and queue modules. */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [DependenciesHealth],
})
export class HealthModule {}
