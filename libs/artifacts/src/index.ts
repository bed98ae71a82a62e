export * from './artifact-storage';
export * from './artifacts.module';
export * from './download-token';
export * from './local-artifact-storage';
export * from './recording-format';
