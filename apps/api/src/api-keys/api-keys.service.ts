import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Errors } from '@app/common';
import { ApiKey } from '@app/persistence';
import { ApiKeyAuthenticator } from '../auth/api-key-authenticator.service';
import { issueApiKey } from '../auth/api-key-secret';
import { apiKeyNotFound } from './api-key-not-found.error';
import { ApiKeyView } from './api-key-view';
import { CreateApiKeyDto } from './create-api-key.dto';
import { CreatedApiKeyView } from './created-api-key-view';

/** Issues, lists and revokes the API keys of one organization. */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly authenticator: ApiKeyAuthenticator,
  ) {}

  async create(organizationId: number, input: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    const workflowIds = input.workflow_ids ? [...new Set(input.workflow_ids)].sort((a, b) => a - b) : null;
    if (workflowIds && input.role === 'admin') {
      throw Errors.validation('workflow_ids applies to trigger keys only: an admin key reaches every workflow');
    }
    if (workflowIds) await this.assertWorkflowsBelong(organizationId, workflowIds);

    const issued = issueApiKey();
    const row = await this.dataSource.getRepository(ApiKey).save({
      organizationId,
      name: input.name,
      role: input.role,
      keyHash: issued.hash,
      keyPrefix: issued.displayPrefix,
      workflowIds,
      revokedAt: null,
    });
    return {
      id: row.id,
      name: row.name,
      role: row.role,
      workflow_ids: row.workflowIds,
      key: issued.key,
      key_prefix: row.keyPrefix,
      created_at: row.createdAt.toISOString(),
    };
  }

  async list(organizationId: number): Promise<ApiKeyView[]> {
    const rows = await this.dataSource.getRepository(ApiKey).find({ where: { organizationId }, order: { id: 'DESC' } });
    return rows.map((row) => ApiKeyView.from(row));
  }

  /**
   * Revokes in one conditional update (revoking twice keeps the first time).
   * This replica forgets the key at once; the others stop accepting it when
   * their cached lookup expires (API_KEY_CACHE_TTL_MS, at most 5 s).
   */
  async revoke(organizationId: number, id: number): Promise<void> {
    const result = await this.dataSource
      .getRepository(ApiKey)
      .createQueryBuilder()
      .update()
      .set({ revokedAt: () => 'COALESCE(revoked_at, now())' })
      .where('id = :id AND organization_id = :organizationId', { id, organizationId })
      .returning(['keyHash'])
      .execute();
    const revoked = (result.raw as Array<{ key_hash: string }>)[0];
    if (!revoked) throw apiKeyNotFound();
    this.authenticator.forget(revoked.key_hash);
  }

  private async assertWorkflowsBelong(organizationId: number, workflowIds: number[]): Promise<void> {
    const found: Array<{ id: number }> = await this.dataSource.query(
      'SELECT id FROM workflows WHERE organization_id = $1 AND id = ANY($2::integer[])',
      [organizationId, workflowIds],
    );
    const known = new Set(found.map((row) => row.id));
    const missing = workflowIds.filter((id) => !known.has(id));
    if (missing.length) {
      throw Errors.notFound('workflow_not_found', `No workflow of this organization has the id ${missing.join(', ')}`);
    }
  }
}
