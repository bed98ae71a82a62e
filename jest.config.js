/** Unit tests live beside the code (*.spec.ts, and *.spec.js beside the scripts); end-to-end tests under test/ (*.e2e-spec.ts). */
const swc = ['@swc/jest', {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
}];
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  testMatch: ['<rootDir>/apps/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.js', '<rootDir>/test/**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j)s$': swc },
  // NestJS 12 ships ES modules only; Jest's CommonJS runtime needs them transformed.
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|uid|file-type|strtok3|token-types|@tokenizer|load-esm|content-disposition|cookie)/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  moduleNameMapper: {
    '^@app/(config|common|persistence|queue|telephony|templating|artifacts|health)(/.*)?$': '<rootDir>/libs/$1/src$2',
  },
};
