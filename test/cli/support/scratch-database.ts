import { testRunResources } from '../../support/test-run-id';

export { dropDatabase } from '../../support/test-resource-lifecycle';

/**
 * A database URL beside this run's test database that does not exist yet (for
 * commands that create and seed one from nothing), and its removal.
 */
export function scratchDatabaseUrl(suffix: string): string {
  const url = new URL(testRunResources().databaseUrl);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}
