/**
 * aicli, the community assisted-installer CLI (PyPI `aicli`, pinned in
 * test/compat/requirements.txt with the generated client it is built on),
 * drives Landfall unchanged through the ordinary flow: create a cluster,
 * fetch its discovery ISO, see simulated hosts appear, update them, install,
 * wait, download the kubeconfig, read events, manifests, delete.
 * aicli_flow.py runs each step as a user would (one aicli process each) and
 * checks what aicli printed or wrote.
 *
 * The stack is the one `npm start` runs, in this process: API (response
 * validation on) and worker, on a real Temporal dev server and PostgreSQL,
 * with a base live ISO to build discovery images from; the hosts are a
 * `landfall fleet` process (real agent loops, simulated executors with
 * half-second install stages), as a separate program boots them.
 * The step log (each step and its time) is kept in test-artifacts/aicli-flow.txt.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { buildSyntheticLiveIso, xorrisoAvailable, type SyntheticIso } from '../support/live-iso';
import { tempDir } from '../support/services';

const ROOT = path.resolve(__dirname, '../..');
const PYTHON = path.join(ROOT, '.tools', 'compat-venv', 'bin', 'python');
const SCRIPT = path.join(__dirname, 'aicli_flow.py');
const MAIN = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const TIMEOUT_MS = 300_000;
const LOG = path.join(ROOT, 'test-artifacts', 'aicli-flow.txt');

if (!xorrisoAvailable()) console.warn('aicli test skipped: xorriso is missing (it builds the base live ISO the discovery image is made from)');

let h: InstallHarness;
let iso: SyntheticIso;
beforeAll(async () => {
  if (!xorrisoAvailable()) return;
  iso = await buildSyntheticLiveIso({ fillerBytes: 4 * 1024 * 1024, name: 'aicli.iso' });
  h = await startInstallHarness({ BASE_ISO_PATH: iso.path });
});
afterAll(async () => {
  await h?.stop();
});

function runFlow(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(PYTHON, [SCRIPT], { cwd: ROOT, timeout: TIMEOUT_MS - 20_000, maxBuffer: 16 * 1024 * 1024, env: { PATH: process.env.PATH!, PYTHONUNBUFFERED: '1', ...env } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, output: `${stdout}${stderr ? `\n--- stderr ---\n${stderr}` : ''}${err?.killed ? '\n(killed: timed out)' : ''}` });
    });
  });
}

(xorrisoAvailable() ? it : it.skip)(
  'aicli drives the ordinary flow from cluster creation to deletion',
  async () => {
    if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing; run "bash scripts/install-compat-venv.sh" (npm test does)`);
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing; run "npm run build" (npm test does)`);
    const started = Date.now();
    const { code, output } = await runFlow({
      LANDFALL_URL: h.api.url,
      LANDFALL_FLEET: JSON.stringify([process.execPath, MAIN]),
      BASE_ISO: iso.path,
      WORK_DIR: tempDir('aicli'),
    });
    mkdirSync(path.dirname(LOG), { recursive: true });
    writeFileSync(LOG, `${output}\n(${Math.round((Date.now() - started) / 1000)} s)\n`);
    const summary = /^aicli: (\d+) passed, (\d+) failed/m.exec(output);
    if (code !== 0 || !summary || summary[2] !== '0') {
      const ev = await h.api.db('events').orderBy('seq').select('name', 'props', 'event_time');
      writeFileSync(LOG + '.events', ev.map((e: { name: string; props: unknown; event_time: Date }) => `${new Date(e.event_time).toISOString()} ${e.name} ${JSON.stringify(e.props)}`).join('\n'));
      const hs = await h.api.db('hosts').select('id', 'status', 'status_info', 'doc');
      writeFileSync(LOG + '.hosts', JSON.stringify(hs.map((x: { id: string; status: string; status_info: string; doc: { progress?: unknown } }) => ({ id: x.id, status: x.status, info: x.status_info, progress: x.doc.progress })), null, 1));
    }
    if (code !== 0 || !summary || summary[2] !== '0') throw new Error(`aicli flow exited ${code} after ${Math.round((Date.now() - started) / 1000)} s:\n${output}`);
    // Every step ran (a step list cut short would still exit 0 only if none failed).
    expect(Number(summary[1])).toBeGreaterThanOrEqual(28);
  },
  TIMEOUT_MS,
);
