import { Global, Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ARTIFACT_STORAGE } from './artifact-storage';
import { DownloadTokens } from './download-token';
import { LocalArtifactStorage } from './local-artifact-storage';

/** Artifact storage (a local directory by default) and the download-token signer. */
@Global()
@Module({
  providers: [
    {
      provide: ARTIFACT_STORAGE,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        const storage = new LocalArtifactStorage(config.artifactsDir);
        await storage.checkWritable();
        return storage;
      },
    },
    {
      provide: DownloadTokens,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new DownloadTokens(config.secretsKey),
    },
  ],
  exports: [ARTIFACT_STORAGE, DownloadTokens],
})
export class ArtifactsModule {}
