/**
 * Wire compatibility with the generated assisted-service Python client
 * (`assisted-service-client` from PyPI, pinned in test/compat/requirements.txt
 * and installed into .tools/compat-venv by scripts/install-compat-venv.sh).
 * test_assisted_client.py drives the API only through that client, which
 * rejects responses our OpenAPI validation alone would let through.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { startApiHarness, type ApiHarness } from '../support/api-harness';

const ROOT = path.resolve(__dirname, '../..');
const PYTHON = path.join(ROOT, '.tools', 'compat-venv', 'bin', 'python');
const SCRIPT = path.join(__dirname, 'test_assisted_client.py');

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness({ authType: 'none' });
});
afterAll(async () => {
  await h?.stop();
});

function runScript(base: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, [SCRIPT, base], { cwd: ROOT, timeout: 120000, maxBuffer: 8 * 1024 * 1024, env: { ...process.env, PYTHONUNBUFFERED: '1' } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr ? `\n--- stderr ---\n${stderr}` : ''}${err?.killed ? '\n(killed: timed out after 120 s)' : ''}` });
    });
  });
}

it('the generated Python client drives the core flow', async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing; run "bash scripts/install-compat-venv.sh" (npm test does)`);
  const { code, output } = await runScript(`${h.url}/api/assisted-install`);
  const summary = /^compat: (\d+) passed, 0 failed$/m.exec(output);
  const passed = summary ? Number(summary[1]) : 0;
  if (code !== 0 || passed < 15) {
    throw new Error(`compat script exited ${code} with ${passed} checks passed (want exit 0 and at least 15):\n${output}`);
  }
  expect(code).toBe(0);
  expect(passed).toBeGreaterThanOrEqual(15);
});
