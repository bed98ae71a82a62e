import type { EntityManager } from 'typeorm';

/**
 * Takes the organization's row lock for the rest of the transaction: changes
 * that must see the organization's other rows as they stand (its default
 * configuration, its last admin key) take it first, and so run one at a time.
 */
export async function lockOrganization(manager: EntityManager, organizationId: number): Promise<void> {
  await manager.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
}
