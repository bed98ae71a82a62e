import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';

export const AUTOVACUUM_OFF_WARNING =
  'autovacuum is off on this Postgres server: every call updates its run several times, so workflow_runs ' +
  'fills with dead row versions that slow every query on it; turn autovacuum on, or VACUUM the database regularly';

/**
 * Warns once at start when the database will not vacuum itself: a dialer
 * would then slow down week by week for no visible reason. Advice only: it
 * never holds the start, and a database that is away is for health to report.
 */
@Injectable()
export class AutovacuumCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger(AutovacuumCheck.name);

  constructor(private readonly dataSource: DataSource) {}

  onApplicationBootstrap(): void {
    void this.check();
  }

  async check(): Promise<boolean | null> {
    try {
      const [row]: Array<{ autovacuum?: string }> = await this.dataSource.query('SHOW autovacuum');
      const on = row?.autovacuum === 'on';
      if (!on) this.logger.warn(AUTOVACUUM_OFF_WARNING);
      return on;
    } catch {
      return null;
    }
  }
}
