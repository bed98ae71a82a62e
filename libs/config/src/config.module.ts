import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';
import { APP_CONFIG } from './app-config.token';

/** Makes the validated configuration injectable as `APP_CONFIG` everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
