import { Controller, Get, Inject } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorResult } from '@nestjs/terminus';
import { DependenciesHealth } from './dependencies.health';

export type ReadinessDependency = 'postgres' | 'redis';
export const READINESS_DEPENDENCIES = Symbol('READINESS_DEPENDENCIES');

/**
 * `/health/live`: the process answers. `/health/ready`: the dependencies the
 * app cannot serve without answer too (503 otherwise). The API's is
 * Postgres alone: a trigger is stored and dialed once Redis is back, so an
 * API taken out of its load balancer for a Redis outage would refuse the
 * triggers it can take. The dialer's is Postgres and Redis.
 */
@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly dependencies: DependenciesHealth,
    @Inject(READINESS_DEPENDENCIES) private readonly readiness: readonly ReadinessDependency[],
  ) {}

  @Get('live')
  @ApiOperation({ operationId: 'healthLive' })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @HealthCheck()
  @ApiOperation({ operationId: 'healthReady' })
  ready() {
    const probes: Record<ReadinessDependency, () => Promise<HealthIndicatorResult>> = {
      postgres: () => this.dependencies.postgres(),
      redis: () => this.dependencies.redis(),
    };
    return this.health.check(this.readiness.map((dependency) => probes[dependency]));
  }

  /** `/health`, the same check: left out of the OpenAPI document, where an operation id names one operation. */
  @Get()
  @HealthCheck()
  @ApiExcludeEndpoint()
  readyAtRoot() {
    return this.ready();
  }
}
