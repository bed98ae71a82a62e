export * from './create-root-logger';
export * from './domain-error';
export * from './error-body';
export * from './errors';
export * from './http-exception.filter';
export * from './pino-nest-logger';
export * from './validation.pipe';
export * from './parse-id.pipe';
