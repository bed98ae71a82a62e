import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { ARTIFACT_KINDS, ArtifactKind } from '@app/artifacts';

export const MAX_DOWNLOAD_LIFETIME_SECONDS = 7 * 24 * 3600;

export class CreateDownloadDto {
  @ApiProperty({ enum: ARTIFACT_KINDS })
  @IsIn(ARTIFACT_KINDS as unknown as string[])
  artifact: ArtifactKind;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_DOWNLOAD_LIFETIME_SECONDS, default: 3600 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_DOWNLOAD_LIFETIME_SECONDS)
  expires_in_seconds?: number;
}

export class DownloadLinkDto {
  @ApiProperty() url: string;
  @ApiProperty({ format: 'date-time' }) expires_at: string;
}
