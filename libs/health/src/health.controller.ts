import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { DependenciesHealth } from './dependencies.health';

/** `/health/live`: the process answers. `/health/ready`: Postgres and Redis answer too (503 otherwise). */
@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly dependencies: DependenciesHealth,
  ) {}

  @Get('live')
  @ApiOperation({ operationId: 'healthLive' })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get(['ready', ''])
  @HealthCheck()
  @ApiOperation({ operationId: 'healthReady' })
  ready() {
    return this.health.check([() => this.dependencies.postgres(), () => this.dependencies.redis()]);
  }
}
