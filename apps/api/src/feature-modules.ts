import { AgentSessionsModule } from './agent-sessions/agent-sessions.module';
import { ApiKeysModule } from './api-keys/api-keys.module';
import { DownloadsModule } from './downloads/downloads.module';
import { RunsModule } from './runs/runs.module';
import { TelephonyConfigurationsModule } from './telephony-configurations/telephony-configurations.module';
import { TelephonyWebhooksModule } from './telephony-webhooks/telephony-webhooks.module';
import { PublicTriggersModule } from './triggers/public-triggers.module';
import { TriggersAdminModule } from './triggers/triggers-admin.module';
import { WorkflowsModule } from './workflows/workflows.module';

/** The API's feature modules, one folder each. */
export const FEATURE_MODULES = [
  PublicTriggersModule,
  RunsModule,
  DownloadsModule,
  ApiKeysModule,
  WorkflowsModule,
  TriggersAdminModule,
  TelephonyConfigurationsModule,
  TelephonyWebhooksModule,
  AgentSessionsModule,
];
