import { createMigratedDatabase, deleteQueueKeys, dropDatabase } from './test-resource-lifecycle';
import { queuePrefixBeside, scratchDatabaseUrl, testRunResources } from './test-run-id';

export interface IsolatedResources {
  /** Environment overrides for startTestApps: this suite's own database and queue prefix. */
  env: { DATABASE_URL: string; QUEUE_PREFIX: string };
  drop(): Promise<void>;
}

/**
 * A database (migrated) and a queue prefix of one suite's own, beside the
 * run's shared ones. For suites whose dialer sweeps every queued run: in the
 * shared database it would also find, and dial, the runs and jobs other suites
 * left queued, and its timings would depend on them.
 */
export async function createIsolatedResources(name: string): Promise<IsolatedResources> {
  const { queuePrefix } = testRunResources();
  const isolatedUrl = scratchDatabaseUrl(name);
  await createMigratedDatabase(isolatedUrl);
  const prefix = queuePrefixBeside(queuePrefix, name);
  return {
    env: { DATABASE_URL: isolatedUrl, QUEUE_PREFIX: prefix },
    drop: async () => {
      await deleteQueueKeys(prefix);
      await dropDatabase(isolatedUrl);
    },
  };
}
