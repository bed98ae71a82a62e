import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors } from '@app/common';
import { TriggerLookups } from './trigger-lookups.service';
import { TriggerView } from './update-trigger.dto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Turns an organization's API triggers on and off. */
@Injectable()
export class TriggersAdminService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly lookups: TriggerLookups,
  ) {}

  async setActive(organizationId: number, uuid: string, isActive: boolean): Promise<TriggerView> {
    // Not a UUID: cannot exist, and must not reach Postgres's uuid cast.
    if (!UUID.test(uuid)) throw triggerNotFound();
    const [rows]: [Array<{ uuid: string; workflow_id: number; is_active: boolean }>, number] = await this.dataSource.query(
      `UPDATE api_triggers SET is_active = $3 WHERE uuid = $1 AND organization_id = $2
       RETURNING uuid, workflow_id, is_active`,
      [uuid.toLowerCase(), organizationId, isActive],
    );
    if (rows.length === 0) throw triggerNotFound();
    this.lookups.forgetOrganization(organizationId);
    return rows[0];
  }
}

function triggerNotFound(): DomainError {
  return Errors.notFound('trigger_not_found', 'No API trigger with this UUID belongs to this organization');
}
