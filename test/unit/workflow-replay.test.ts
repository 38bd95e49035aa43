/**
 * Replays saved install histories against today's workflow code: a change
 * that breaks determinism for installs already running fails CI here, not in
 * production. The replay runs in `landfall replay` (plain node): jest's module
 * registry loads protobufjs twice, which the SDK's history decoding rejects.
 * Refresh the fixtures with SAVE_HISTORY=1 (test/integration/install.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/services';

const DIR = path.resolve(__dirname, '../fixtures/histories');
const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));

describe('workflow replay', () => {
  it('has saved histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('replays %s deterministically', (file) => {
    const r = spawnSync(process.execPath, [MAIN, 'replay', path.join(DIR, file)], { encoding: 'utf8' });
    expect([r.status, r.stdout.trim()]).toEqual([0, `replay ok: ${path.join(DIR, file)}`]);
  });

  it('catches a history the code cannot reproduce', () => {
    // The same install, but its first activity renamed: the code schedules another one.
    const tampered = readFileSync(path.join(DIR, files[0]!), 'utf8').replace(/"name": "prepareInstallation"/g, '"name": "renamedActivity"');
    const file = path.join(tempDir('replay'), 'tampered.json');
    writeFileSync(file, tampered);
    const r = spawnSync(process.execPath, [MAIN, 'replay', file], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/replay FAILED/);
  });
});
