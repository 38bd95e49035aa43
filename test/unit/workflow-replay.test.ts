/**
 * Replays saved install histories against today's workflow code: a change
 * that breaks determinism for installs already running fails CI here, not in
 * production. The replay runs in `landfall replay` (plain node): jest's module
 * registry loads protobufjs twice, which the SDK's history decoding rejects.
 * Refresh the fixtures with SAVE_HISTORY=1: install-cluster-3-2.json from the
 * end-to-end install (test/integration/install.test.ts), the others from the
 * time-skipping workflow tests (test/workflow/install-cluster.test.ts), one
 * per path. Two are runs of the code from before the handler lock, which
 * replay the unpatched path: install-cluster-3-2.json and
 * install-cluster-pre-lock-retry-two-hosts.json (commit 6861c51's workflow, not
 * refreshable: two retries at once, their activities side by side and the loop
 * failing the cluster again mid-retry, which left that install in error with
 * every host installed).
 * Refreshing 3-2 with SAVE_HISTORY turns it into a patched run; keep a
 * pre-lock copy under another name if you do.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/services';
import { SERIALISED_STEPS_PATCH } from '../../workflows/install-cluster';

const DIR = path.resolve(__dirname, '../fixtures/histories');
const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

/** Every path the workflow tests drive, each with its saved history. */
const PATHS = [
  'installed',
  'preparing-timeout',
  'preparing-failed',
  'stage-timeouts-retry',
  'finalizing-timeout',
  'completion-failed',
  'cancel-preparing',
  'cancel-installing',
  'reset-finalizing',
  'retry-same-host',
  'retry-two-hosts',
  'reset-during-retry',
  'continue-as-new',
];

function replay(paths: string[]) {
  return spawnSync(process.execPath, [MAIN, 'replay', ...paths], { encoding: 'utf8' });
}

/** Whether a history's run took the handler-lock patch (its marker's payload names the patch). */
function marked(file: string): boolean {
  const history = JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as { events: Array<{ markerRecordedEventAttributes?: { markerName: string; details?: Record<string, { payloads: Array<{ data: string }> }> } }> };
  return history.events.some((e) => {
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName !== 'core_patch') return false;
    return Object.values(m.details ?? {}).some((d) => d.payloads.some((p) => (JSON.parse(Buffer.from(p.data, 'base64').toString()) as { id?: string }).id === SERIALISED_STEPS_PATCH));
  });
}

describe('workflow replay', () => {
  it('has a saved history for every path, and runs from before the handler lock', () => {
    expect(files).toEqual(expect.arrayContaining(['install-cluster-pre-lock-retry-two-hosts.json', ...PATHS.map((p) => `install-cluster-${p}.json`)]));
    // The old runs have no patch marker (they replay without the lock); the new ones have it.
    expect(marked('install-cluster-pre-lock-retry-two-hosts.json')).toBe(false);
    expect(PATHS.filter((p) => !marked(`install-cluster-${p}.json`))).toEqual([]);
  });

  it('replays every saved history deterministically', () => {
    const all = files.map((f) => path.join(DIR, f));
    const r = replay(all);
    expect(r.stdout.trim().split('\n')).toEqual(all.map((f) => `replay ok: ${f}`));
    expect(r.status).toBe(0);
  });

  it('catches a history the code cannot reproduce', () => {
    // The same install, but its first activity renamed: the code schedules another one.
    const tampered = readFileSync(path.join(DIR, 'install-cluster-3-2.json'), 'utf8').replace(/"name": "prepareInstallation"/g, '"name": "renamedActivity"');
    const file = path.join(tempDir('replay'), 'tampered.json');
    writeFileSync(file, tampered);
    const r = replay([file]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/replay FAILED/);
  });
});
