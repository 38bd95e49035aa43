import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * The purity lint (eslint/pure-imports.js) is only worth having if it fires: feed it offending
 * workflow and domain code, and code it must accept.
 */
const ROOT = path.resolve(__dirname, '../..');
const ESLINT = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

/**
 * Every case is linted in one child process (ESLint loads its flat config with a dynamic import,
 * which jest's VM cannot do, and one ESLint per case would cost a second each).
 */
const cases = new Map<string, { code: string; file: string }>();
let results: Record<string, string[]> | undefined;
function lint(code: string, file: string): string[] {
  if (!results) {
    const script = `
      const { ESLint } = require('eslint');
      let input = '';
      process.stdin.on('data', (d) => (input += d)).on('end', async () => {
        const eslint = new ESLint({ cwd: process.cwd() });
        const out = {};
        for (const [key, c] of JSON.parse(input)) {
          const [r] = await eslint.lintText(c.code, { filePath: c.file });
          out[key] = r.messages.filter((m) => m.ruleId === 'landfall/pure-imports').map((m) => m.message);
        }
        process.stdout.write(JSON.stringify(out));
      });`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, input: JSON.stringify([...cases]), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    results = JSON.parse(r.stdout) as Record<string, string[]>;
  }
  const found = results[`${file}\n${code}`];
  if (!found) throw new Error(`case not registered before the first lint: ${file}: ${code}`);
  return found;
}
/** Registers a case while the tests are collected, so the one lint run sees them all. */
function lintCase(code: string, file: string): () => string[] {
  cases.set(`${file}\n${code}`, { code, file });
  return () => lint(code, file);
}

describe('workflow purity lint (allowlist)', () => {
  const rejected = [
    "import fs from 'node:fs';",
    "import { readFileSync } from 'fs';",
    "import { isIP } from 'node:net';",
    "import knex from 'knex';",
    "import { Client } from 'pg';",
    "import { Connection } from '@temporalio/client';",
    "import { ApplicationFailure } from '@temporalio/common';",
    "import { parse } from 'yaml';",
    "import { createDb } from '../src/db/database';",
    "import { loadConfig } from '../src/config';",
    "import { startInstallWorkflow } from '../src/services/install-signals';",
    "import { createSelfCheckActivities } from '../activities/self-check';",
    "import type { ClusterRow } from '../src/db/rows';",
    "export { createDb } from '../src/db/database';",
    "const fs = require('node:fs');",
    "const m = import('node:fs');",
  ].map((line) => [line, lintCase(`${line}\nexport const x = 1;\n`, 'workflows/example.ts')] as const);
  it.each(rejected)('rejects %s', (_line, messages_) => {
    const messages = messages_();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/is not allowed here: workflow code may import only @temporalio\/workflow/);
  });

  const allowed = lintCase(
    [
      "import { proxyActivities } from '@temporalio/workflow';",
      "import type { SelfCheckActivities } from '../activities/self-check';",
      "import { getInstallProgress } from './install-cluster.messages';",
      "import { successRule } from '../src/domain/lifecycle/success-rule';",
      "import { TASK_QUEUE } from '../src/temporal/names';",
      "export { selfCheckWorkflow } from './self-check';",
      'export const a = proxyActivities<SelfCheckActivities>({ startToCloseTimeout: 1000 });',
      'export const q = [TASK_QUEUE, getInstallProgress, successRule];',
    ].join('\n'),
    'workflows/example.ts',
  );
  it('allows the workflow SDK, workflow and message files, activity types, domain code and the shared names', () => {
    expect(allowed()).toEqual([]);
  });

  it('passes on every workflow in the repository', () => {
    const r = spawnSync(process.execPath, [ESLINT, '--format', 'json', 'workflows', 'src/domain', 'src/temporal/names.ts', 'src/errors.ts'], { cwd: ROOT, encoding: 'utf8' });
    const results = JSON.parse(r.stdout) as Array<{ filePath: string; messages: Array<{ ruleId: string; message: string }> }>;
    expect(results.length).toBeGreaterThan(20);
    expect(results.flatMap((f) => f.messages.filter((m) => m.ruleId === 'landfall/pure-imports').map((m) => `${f.filePath}: ${m.message}`))).toEqual([]);
  });
});

describe('domain purity lint (allowlist, no I/O)', () => {
  const rejected = [
    ['src/domain/example.ts', "import net from 'node:net';"],
    ['src/domain/example.ts', "import { readFile } from 'node:fs/promises';"],
    ['src/domain/example.ts', "import { Client } from 'pg';"],
    ['src/domain/example.ts', "import pino from 'pino';"],
    ['src/domain/example.ts', "import { proxyActivities } from '@temporalio/workflow';"],
    ['src/domain/example.ts', "import { loadConfig } from '../config';"],
    ['src/domain/example.ts', "import { ClustersRepo } from '../db/clusters-repo';"],
    ['src/domain/lifecycle/example.ts', "import { createDb } from '../../db/database';"],
    ['src/domain/lifecycle/example.ts', "import { logger } from '../../logger';"],
    ['src/domain/example.ts', "import { LinuxExecutor } from '../../agent/executors/linux';"],
    ['src/domain/example.ts', "const pg = require('pg');"],
  ].map(([file, line]) => [file!, line!, lintCase(`${line}\nexport const x = 1;\n`, file!)] as const);
  it.each(rejected)('rejects in %s: %s', (_file, _line, messages_) => {
    const messages = messages_();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/is not allowed here: domain code is pure/);
  });

  const allowed = lintCase(
    [
      "import { parse } from 'yaml';",
      "import { AppError } from '../../errors';",
      "import { successRule } from './success-rule';",
      "import { ipVersion } from '../ip-address';",
      "import type { Inventory } from '../../../agent/types';",
      'export const x = [parse, AppError, successRule, ipVersion] as unknown as Inventory;',
    ].join('\n'),
    'src/domain/lifecycle/example.ts',
  );
  it('allows other domain modules at any depth, src/errors, yaml and agent types', () => {
    expect(allowed()).toEqual([]);
  });

  const services = lintCase("import fs from 'node:fs';\nexport const x = fs;\n", 'src/services/example.ts');
  const activities = lintCase("import fs from 'node:fs';\nexport const x = fs;\n", 'activities/example.ts');
  it('does not apply to the layers that do I/O', () => {
    expect(services()).toEqual([]);
    expect(activities()).toEqual([]);
  });
});

describe('purity lint: I/O through globals, with no import to refuse', () => {
  const uses = [
    "export const get = () => fetch('http://127.0.0.1/');",
    'export const home = () => process.env.HOME;',
    "export const say = () => console.log('x');",
    "export const get = () => globalThis.fetch('http://127.0.0.1/');",
    'export const s = () => new WebSocket(`ws://127.0.0.1/`);',
  ];
  const rejected = ['workflows/example.ts', 'src/domain/example.ts'].flatMap((file) => uses.map((code) => [file, code, lintCase(`${code}\n`, file)] as const));
  it.each(rejected)('rejects in %s: %s', (_file, _code, messages_) => {
    const messages = messages_();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^the global '(fetch|process|console|globalThis|WebSocket)' is not allowed here \(I\/O without an import\)/);
  });

  const shadowed = lintCase('export function f(process: number, fetch: () => number): number {\n  const console = { log: (n: number) => n };\n  return console.log(process + fetch());\n}\n', 'src/domain/example.ts');
  it('allows a local of the same name (it is not the global)', () => {
    expect(shadowed()).toEqual([]);
  });

  const services = lintCase("export const get = () => fetch('http://127.0.0.1/');\n", 'src/services/example.ts');
  it('does not apply to the layers that do I/O', () => {
    expect(services()).toEqual([]);
  });
});
