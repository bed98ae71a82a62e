export * from './app-config';
export * from './app-config.token';
export * from './config-error';
export * from './config.module';
export * from './load-app-config';
export * from './load-database-url';
export * from './secrets-key';
