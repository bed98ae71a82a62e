import { ApiProperty } from '@nestjs/swagger';
import { API_KEY_ROLES, ApiKeyRole } from '@app/persistence';

/** The answer to creating a key: the only time the full key is shown. */
export class CreatedApiKeyView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty({ enum: API_KEY_ROLES }) role: ApiKeyRole;
  @ApiProperty({ type: 'integer', isArray: true, nullable: true, description: 'Null: every workflow of the organization' })
  workflow_ids: number[] | null;
  @ApiProperty({ description: 'The key itself. Shown once: store it now, it cannot be read back.' }) key: string;
  @ApiProperty({ example: 'vak_AbC123' }) key_prefix: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}
