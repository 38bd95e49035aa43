import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** The lint rule is only worth having if it fires: feed it offending workflow code. */
const ROOT = path.resolve(__dirname, '../..');
const ESLINT = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

function lint(code: string, file = 'workflows/example.ts'): string[] {
  // ESLint loads its flat config with a dynamic import, which jest's VM cannot do: run the real CLI.
  const r = spawnSync(process.execPath, [ESLINT, '--stdin', '--stdin-filename', file, '--format', 'json'], { cwd: ROOT, input: code, encoding: 'utf8' });
  const [result] = JSON.parse(r.stdout) as Array<{ messages: Array<{ ruleId: string; message: string }> }>;
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

describe('workflow purity lint rule', () => {
  it.each([
    "import fs from 'node:fs';",
    "import { readFileSync } from 'fs';",
    "import knex from 'knex';",
    "import { Client } from 'pg';",
    "import { Connection } from '@temporalio/client';",
    "import { createDb } from '../src/db/database';",
    "import { createSelfCheckActivities } from '../activities/self-check';",
  ])('rejects %s in workflows/', (line) => {
    expect(lint(`${line}\nexport const x = 1;\n`)).not.toEqual([]);
  });

  it('allows the workflow SDK, activity types and pure domain code', () => {
    const code = [
      "import { proxyActivities } from '@temporalio/workflow';",
      "import type { SelfCheckActivities } from '../activities/self-check';",
      "import { TASK_QUEUE } from '../src/temporal/names';",
      'export const a = proxyActivities<SelfCheckActivities>({ startToCloseTimeout: 1000 });',
      'export const q = TASK_QUEUE;',
    ].join('\n');
    expect(lint(code)).toEqual([]);
  });

  it('does not apply outside workflows/', () => {
    expect(lint("import fs from 'node:fs';\nexport const x = fs;\n", 'src/example.ts')).toEqual([]);
  });
});
