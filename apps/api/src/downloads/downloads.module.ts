import { Module } from '@nestjs/common';
import { ArtifactDownloadsController } from './artifact-downloads.controller';

@Module({ controllers: [ArtifactDownloadsController] })
export class DownloadsModule {}
