export * from './prompt-renderer';
export * from './render-definition';
export * from './templating.module';
