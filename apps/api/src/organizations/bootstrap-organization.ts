import { DataSource } from 'typeorm';
import { ApiKey, Organization } from '@app/persistence';
import { issueApiKey } from '../auth/api-key-secret';

export interface BootstrappedOrganization {
  organization_id: number;
  /** An admin key, shown once. */
  api_key: string;
}

/** Creates an organization with its first admin key, in one transaction. */
export async function bootstrapOrganization(dataSource: DataSource, name: string): Promise<BootstrappedOrganization> {
  return dataSource.transaction(async (manager) => {
    const organization = await manager.getRepository(Organization).save({ name });
    const issued = issueApiKey();
    await manager.getRepository(ApiKey).save({
      organizationId: organization.id,
      name: 'bootstrap admin key',
      role: 'admin',
      keyHash: issued.hash,
      keyPrefix: issued.displayPrefix,
      workflowIds: null,
      revokedAt: null,
    });
    return { organization_id: organization.id, api_key: issued.key };
  });
}
