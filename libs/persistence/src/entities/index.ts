import { ApiKey } from './api-key.entity';
import { ApiTrigger } from './api-trigger.entity';
import { IdempotencyKey } from './idempotency-key.entity';
import { Organization } from './organization.entity';
import { SandboxCall } from './sandbox-call.entity';
import { TelephonyConfiguration } from './telephony-configuration.entity';
import { WorkflowDefinition } from './workflow-definition.entity';
import { WorkflowRun } from './workflow-run.entity';
import { Workflow } from './workflow.entity';

export {
  ApiKey,
  ApiTrigger,
  IdempotencyKey,
  Organization,
  SandboxCall,
  TelephonyConfiguration,
  Workflow,
  WorkflowDefinition,
  WorkflowRun,
};
export type { ApiKeyRole } from './api-key.entity';
export { API_KEY_ROLES } from './api-key.entity';
export type { DefinitionStatus } from './workflow-definition.entity';
export type { RunLogEvent, RunLogs } from './workflow-run.entity';

export const ENTITIES = [
  Organization,
  ApiKey,
  Workflow,
  WorkflowDefinition,
  ApiTrigger,
  TelephonyConfiguration,
  WorkflowRun,
  IdempotencyKey,
  SandboxCall,
];
