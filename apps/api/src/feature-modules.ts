import { DownloadsModule } from './downloads/downloads.module';
import { RunsModule } from './runs/runs.module';
import { PublicTriggersModule } from './triggers/public-triggers.module';

/** The API's feature modules, one folder each. */
export const FEATURE_MODULES = [PublicTriggersModule, RunsModule, DownloadsModule];
