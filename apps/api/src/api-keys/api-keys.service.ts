import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Errors } from '@app/common';
import { ApiKey, lockOrganization } from '@app/persistence';
import { ApiKeyAuthenticator } from '../auth/api-key-authenticator.service';
import { issueApiKey } from '../auth/api-key-secret';
import { apiKeyNotFound } from './api-key-not-found.error';
import { ApiKeyPage, ApiKeyView } from './api-key-view';
import { readPage } from '../paging/id-cursor';
import { PageQuery } from '../paging/page-query';
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

  /** A page of the organization's keys, revoked ones included, newest first. */
  async list(organizationId: number, query: PageQuery): Promise<ApiKeyPage> {
    const page = await readPage(this.dataSource.getRepository(ApiKey), { organizationId }, query);
    return { api_keys: page.items.map((row) => ApiKeyView.from(row)), next_cursor: page.nextCursor };
  }

  /**
   * Revokes a key (revoking twice keeps the first time), but never the
   * organization's last admin key: nothing could then issue another, and the
   * organization would be locked out of its management API. Revocations of
   * one organization take its row lock in turn, so two admins revoking each
   * other at once leave one. This replica forgets the key at once; the
   * others stop accepting it when their cached lookup expires
   * (API_KEY_CACHE_TTL_MS, at most 5 s).
   */
  async revoke(organizationId: number, id: number): Promise<void> {
    const keyHash = await this.dataSource.transaction(async (manager) => {
      await lockOrganization(manager, organizationId);
      const [key]: Array<{ role: string; revoked: boolean }> = await manager.query(
        'SELECT role, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = $1 AND organization_id = $2',
        [id, organizationId],
      );
      if (!key) throw apiKeyNotFound();
      if (key.role === 'admin' && !key.revoked) {
        const [{ others }]: Array<{ others: number }> = await manager.query(
          `SELECT count(*)::int AS others FROM api_keys WHERE organization_id = $1 AND role = 'admin' AND revoked_at IS NULL AND id <> $2`,
          [organizationId, id],
        );
        if (others === 0) {
          throw Errors.conflict('last_admin_key', "This is the organization's last admin key: create another admin key first, then revoke this one");
        }
      }
      // An UPDATE's answer through TypeORM: its rows and its count.
      const [rows]: [Array<{ key_hash: string }>, number] = await manager.query(
        'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING key_hash',
        [id],
      );
      return rows[0].key_hash;
    });
    this.authenticator.forget(keyHash);
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
