import { randomUUID } from 'node:crypto';
import { NewRun, WorkflowRunStore } from '@app/persistence';
import { storedRunIds } from './stored-run-ids';

/** Stores `count` queued runs as the gateway would (no Idempotency-Key) and answers their ids. */
export async function storeQueuedRuns(store: WorkflowRunStore, count: number, overrides: Partial<NewRun> = {}): Promise<number[]> {
  const run = (): NewRun => ({
    organizationId: 1,
    workflowId: 1,
    environment: 'production',
    triggerUuid: randomUUID(),
    apiKeyId: 1,
    telephonyConfigurationId: 1,
    provider: 'sandbox',
    phoneNumber: '+14155550100',
    initialContext: {},
    ...overrides,
  });
  return storedRunIds(await store.insertQueued(Array.from({ length: count }, run)));
}
