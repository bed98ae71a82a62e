export * from './health.module';
export type { ReadinessDependency } from './health.controller';
