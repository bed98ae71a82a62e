import { InitialSchema1763776000000 } from './1763776000000-initial-schema';
import { DeliveryGuarantees1763790000000 } from './1763790000000-delivery-guarantees';
import { AgentSessions1763800000000 } from './1763800000000-agent-sessions';
import { RunTableVacuum1763810000000 } from './1763810000000-run-table-vacuum';
import { BigintRunIds1764240000000 } from './1764240000000-bigint-run-ids';
import { DialedCallLimit1764400000000 } from './1764400000000-dialed-call-limit';
import { RecordingUploadAdmission1764500000000 } from './1764500000000-recording-upload-admission';
import { DefinitionTriggerPaths1764600000000 } from './1764600000000-definition-trigger-paths';

/** Every migration, oldest first. A new one is generated from the entities and added here. */
export const MIGRATIONS = [
  InitialSchema1763776000000,
  DeliveryGuarantees1763790000000,
  AgentSessions1763800000000,
  RunTableVacuum1763810000000,
  BigintRunIds1764240000000,
  DialedCallLimit1764400000000,
  RecordingUploadAdmission1764500000000,
  DefinitionTriggerPaths1764600000000,
];
