import { EntityManager } from 'typeorm';
import { Errors } from '@app/common';
import { DefinitionGraph, triggerPathsOf } from '@app/persistence';

/**
 * Registers the definition's trigger nodes as active API triggers of the
 * workflow, inside the caller's transaction. A path already registered to
 * the same workflow is left as it is (a deactivated trigger stays inactive);
 * one registered to any other workflow is a 409 and rolls the save back.
 */
export async function registerTriggers(
  manager: EntityManager,
  organizationId: number,
  workflowId: number,
  graph: DefinitionGraph,
): Promise<void> {
  const uuids = triggerPathsOf(graph);
  if (uuids.length === 0) return;
  // In one order for every save: two saves claiming the same paths in opposite orders would each wait for the
  // other's row, and Postgres would end one of them as a deadlock (a 500) instead of the loser's 409.
  await manager.query(
    `INSERT INTO api_triggers (uuid, organization_id, workflow_id, is_active)
     SELECT DISTINCT uuid, $2::integer, $3::integer, true FROM unnest($1::uuid[]) AS uuid ORDER BY uuid
     ON CONFLICT (uuid) DO NOTHING`,
    [uuids, organizationId, workflowId],
  );
  // A concurrent insert of the same path has committed by now (ON CONFLICT waits for it), so this sees it.
  const taken: Array<{ uuid: string }> = await manager.query(
    'SELECT uuid FROM api_triggers WHERE uuid = ANY($1::uuid[]) AND workflow_id <> $2',
    [uuids, workflowId],
  );
  if (taken.length) {
    throw Errors.conflict(
      'trigger_conflict',
      `trigger_path ${taken.map((row) => row.uuid).join(', ')} is already registered to another workflow`,
    );
  }
}
