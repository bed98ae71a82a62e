import { ApiProperty } from '@nestjs/swagger';
import { API_KEY_ROLES, ApiKey, ApiKeyRole } from '@app/persistence';
import { CursorPage } from '../paging/cursor-page';

/** A key as listings show it: never the secret, only its display prefix. */
export class ApiKeyView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty({ enum: API_KEY_ROLES }) role: ApiKeyRole;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'Null: every workflow of the organization' })
  workflow_ids: number[] | null;
  @ApiProperty({ example: 'vak_AbC123' }) key_prefix: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revoked_at: string | null;

  static from(row: ApiKey): ApiKeyView {
    return {
      id: row.id,
      name: row.name,
      role: row.role,
      workflow_ids: row.workflowIds,
      key_prefix: row.keyPrefix,
      created_at: row.createdAt.toISOString(),
      revoked_at: row.revokedAt?.toISOString() ?? null,
    };
  }
}

export class ApiKeyPage extends CursorPage {
  @ApiProperty({ type: [ApiKeyView] }) api_keys: ApiKeyView[];
}
