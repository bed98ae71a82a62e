import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { ARTIFACT_KINDS, ArtifactKind } from '@app/artifacts';

export const MAX_DOWNLOAD_LIFETIME_SECONDS = 7 * 24 * 3600;

export class CreateDownloadDto {
  @ApiProperty({ enum: ARTIFACT_KINDS })
  @IsIn(ARTIFACT_KINDS as unknown as string[])
  artifact: ArtifactKind;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_DOWNLOAD_LIFETIME_SECONDS,
    nullable: true,
    description: "The link's lifetime; omitted or null, the gateway's DOWNLOAD_URL_TTL_SECONDS (3,600 by default)",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_DOWNLOAD_LIFETIME_SECONDS)
  expires_in_seconds?: number | null;
}

export class DownloadLinkDto {
  @ApiProperty() url: string;
  @ApiProperty({ format: 'date-time' }) expires_at: string;
}
