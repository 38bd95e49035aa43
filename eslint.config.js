// @ts-check
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

const landfall = require('./eslint/pure-imports');

/**
 * Workflow code is replayed, so it must be deterministic and do no I/O; domain
 * code is pure by design (STYLE.md). Both get an allowlist of imports
 * (eslint/pure-imports.js): a determinism bug or a stray database call fails
 * lint, not a replay in production.
 */
/**
 * What Node offers without an import and does I/O (or reaches what does): the import allowlist alone
 * would let `fetch(…)` or `process.env` through. Banned in workflow and domain code alike.
 */
const IO_GLOBALS = ['fetch', 'process', 'console', 'globalThis', 'global', 'XMLHttpRequest', 'WebSocket', 'EventSource'];

const WORKFLOW_IMPORTS = {
  packages: ['@temporalio/workflow'],
  // workflows/: other workflow files and their message files (linted by this same rule).
  // src/temporal/names: the task queue, workflow id and search attribute names the API and worker share.
  paths: ['workflows', 'src/domain', 'src/temporal/names'],
  typePaths: ['activities'],
  globals: IO_GLOBALS,
  why: 'workflow code may import only @temporalio/workflow, workflow and message files, activity types (import type) and src/domain (see STYLE.md)',
};
const DOMAIN_IMPORTS = {
  // Pure libraries only: parsing, no I/O.
  packages: ['yaml'],
  paths: ['src/domain', 'src/errors'],
  typePaths: ['agent/types'],
  globals: IO_GLOBALS,
  why: 'domain code is pure: it may import only src/domain, src/errors, yaml and types (see STYLE.md)',
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
    plugins: { landfall },
    rules: { 'landfall/pure-imports': ['error', WORKFLOW_IMPORTS] },
  },
  {
    files: ['src/domain/**/*.ts', 'src/errors.ts'],
    plugins: { landfall },
    rules: { 'landfall/pure-imports': ['error', DOMAIN_IMPORTS] },
  },
  {
    // Imported by workflows as well: the same purity, plus the SDK's common types it defines keys with.
    files: ['src/temporal/names.ts'],
    plugins: { landfall },
    rules: { 'landfall/pure-imports': ['error', { ...DOMAIN_IMPORTS, packages: ['@temporalio/common'], paths: ['src/temporal/names'], why: 'src/temporal/names is imported by workflow code: it may import only @temporalio/common' }] },
  },
);
