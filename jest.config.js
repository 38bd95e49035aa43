/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  // Real servers start in these tests; the first Temporal start on a cold machine is slow.
  testTimeout: 180000,
  maxWorkers: 2,
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/.tools/', '<rootDir>/.state/'],
};
