import { ApiKeyRole } from '@app/persistence';

/** The caller, as the API key it presented describes it. */
export interface AuthenticatedKey {
  id: number;
  organizationId: number;
  role: ApiKeyRole;
  /** Null: every workflow of the organization. */
  workflowIds: number[] | null;
}

/** An admin key, or a trigger key not limited to some workflows. */
export function keyMayUseEveryWorkflow(key: AuthenticatedKey): boolean {
  return key.role === 'admin' || key.workflowIds === null;
}

export function keyMayUseWorkflow(key: AuthenticatedKey, workflowId: number): boolean {
  return key.role === 'admin' || key.workflowIds === null || key.workflowIds.includes(workflowId);
}
