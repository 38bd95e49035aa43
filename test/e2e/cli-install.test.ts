/* eslint-disable @typescript-eslint/no-explicit-any -- API bodies are read loosely in this test */
/**
 * `landfall install --wait` in a real terminal (tmux): a bar per host with
 * its stage and percentage, the cluster's status line, events below, and exit
 * 0 once installed; then the installed cluster's kubeconfig and logs.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { call } from '../support/api-harness';
import { bootFleet, startInstallHarness, type InstallHarness } from '../support/install-harness';
import { buildSyntheticLiveIso, xorrisoAvailable } from '../support/live-iso';
import { eventually, tempDir } from '../support/services';

const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const haveTmux = (() => {
  try {
    execFileSync('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
})();
if (!haveTmux) console.warn('cli-install tests skipped: tmux is missing');

let h: InstallHarness;
let work: string;
const socket = `landfall-cli-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });

function landfall(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: work, env: { PATH: process.env.PATH!, LANDFALL_URL: h.api.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

async function json(args: string[]): Promise<any> {
  const r = await landfall([...args, '-o', 'json']);
  if (r.status !== 0) throw new Error(`landfall ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  work = tempDir('cli-install');
  // A discovery image to download, when xorriso can build the synthetic live ISO.
  const env: Record<string, string> = xorrisoAvailable() ? { BASE_ISO_PATH: (await buildSyntheticLiveIso({ fillerBytes: 8 * 1024 * 1024, name: 'tty.iso' })).path } : {};
  h = await startInstallHarness(env);
});
afterAll(async () => {
  try {
    if (haveTmux) tmux('kill-server');
  } catch {
    // no server left
  }
  await h?.stop();
});

(haveTmux ? describe : describe.skip)('landfall install --wait in a terminal', () => {
  it('draws a bar per host with its stage, events below, and exits 0 when installed', async () => {
    const c = await json(['cluster', 'create', 'tty', '--base-domain', 'example.com', '--api-vip', '192.168.127.250', '--ingress-vip', '192.168.127.251', '--machine-network', '192.168.127.0/24']);
    const ie = await json(['infraenv', 'create', '--cluster', 'tty']);
    const fleet = await bootFleet(h, c.id, ie.id, 'tty', 'control-plane:3,worker:1', 4);
    try {
      // Without --wait: the install starts and the command returns the cluster as the API answered.
      const started = await json(['install', '--cluster', 'tty']);
      expect(started).toMatchObject({ id: c.id, status: 'preparing-for-installation', install_started_at: expect.any(String) });
      expect((await call('GET', `${h.api.base}/clusters/${c.id}`)).body.install_started_at).toBe(started.install_started_at);
      const exitFile = path.join(work, 'exit-code');
      const command = `cd ${work} && LANDFALL_URL=${h.api.url} ${process.execPath} ${MAIN} install --cluster tty --wait; echo $? > ${exitFile}; sleep 600`;
      tmux('new-session', '-d', '-x', '160', '-y', '50', '-s', 'install', command);
      // Frames are taken from the start: on a slow machine the installing phase can be over before the attached
      // watcher below has come and gone.
      const frames: string[] = [];
      let capturing = true;
      const capture = (async () => {
        for (; capturing; await new Promise((r) => setTimeout(r, 200))) {
          try {
            frames.push(tmux('capture-pane', '-p', '-t', 'install'));
          } catch {
            // the session is gone: nothing more to see
          }
        }
      })();
      try {
        // A second watcher attaches to the running install, and Ctrl-C leaves the install going.
        await eventually(async () => ['preparing-for-installation', 'installing'].includes((await call('GET', `${h.api.base}/clusters/${c.id}`)).body.status), 30000, 'install started');
        const attached = spawn(process.execPath, [MAIN, 'install', '--cluster', 'tty', '--wait'], { cwd: work, env: { PATH: process.env.PATH!, LANDFALL_URL: h.api.url }, stdio: ['ignore', 'pipe', 'pipe'] });
        let attachedOut = '';
        let attachedErr = '';
        attached.stdout.on('data', (d) => (attachedOut += d));
        attached.stderr.on('data', (d) => (attachedErr += d));
        const attachedExit = new Promise<number | null>((r) => attached.on('close', r));
        await eventually(async () => /^host /m.test(attachedOut), 20000, 'the attached watcher to draw');
        attached.kill('SIGINT');
        expect(await attachedExit).toBe(130);
        expect(attachedOut).toMatch(/^cluster tty is already (preparing-for-installation|installing); following it$/m);
        expect(attachedErr).toBe('landfall: stopped following; the install goes on (landfall install --cluster tty --wait follows it again)\n');

        await eventually(async () => existsSync(exitFile) && statSync(exitFile).size > 0, 120000, 'install --wait to end');
      } finally {
        capturing = false;
        await capture;
      }
      const final = tmux('capture-pane', '-p', '-t', 'install');
      expect(readFileSync(exitFile, 'utf8').trim()).toBe('0');
      expect((await call('GET', `${h.api.base}/clusters/${c.id}`)).body.status).toBe('installed');

      const hosts = (await call('GET', `${h.api.base}/clusters/${c.id}/hosts`)).body as any[];
      const names = hosts.map((x) => x.requested_hostname as string);
      expect(names).toHaveLength(4);
      // While installing: every host has a bar with a percentage and its stage, under the cluster's line.
      const during = frames.find((f) => /installing/.test(f) && names.every((n) => new RegExp(`${n} .*\\[[█░]+\\] +\\d+% (Installing|Writing image to disk|Rebooting|Waiting for control plane|Configuring|Joined|Starting installation)`).test(f)));
      if (!during) throw new Error(`no frame showed every host's bar and stage; last frames:\n${frames.slice(-3).join('\n-----\n')}`);
      expect(during).toMatch(/^cluster tty +\[[█░]+\] +\d+% installing/m);
      // Events stream below the bars.
      const lines = during.split('\n');
      const eventsAt = lines.findIndex((l) => l.startsWith('── events ──'));
      expect(eventsAt).toBeGreaterThan(names.length);
      expect(lines.slice(eventsAt + 1).some((l) => /^\d\d:\d\d:\d\d (info|warning) /.test(l))).toBe(true);
      // The last frame: all bars full, installed, and the hint for the kubeconfig.
      for (const n of names) expect(final).toMatch(new RegExp(`${n} .*\\[█+\\] 100% Done`));
      expect(final).toMatch(/^cluster tty +\[█+\] 100% installed/m);
      expect(final).toMatch(/cluster tty is installed in \d+s; kubeconfig: landfall kubeconfig --cluster tty -f kubeconfig/);
      expect(final).not.toMatch(/landfall: /);

      // Already installed: nothing to do, exit 0.
      const again = await landfall(['install', '--cluster', 'tty', '--wait']);
      expect([again.status, again.stdout]).toEqual([0, 'cluster tty is already installed\n']);

      // kubeconfig: printed, as JSON, and to a file only its owner reads.
      const apiKubeconfig = (await call('GET', `${h.api.base}/clusters/${c.id}/downloads/credentials?file_name=kubeconfig`)).text;
      expect(apiKubeconfig).toContain('server: https://192.168.127.250:6443');
      expect((await landfall(['kubeconfig', '--cluster', 'tty'])).stdout.trimEnd()).toBe(apiKubeconfig.trimEnd());
      expect(await json(['kubeconfig', '--cluster', c.id])).toEqual({ cluster_id: c.id, kubeconfig: apiKubeconfig });
      expect(await json(['kubeconfig', '--cluster', 'tty', '-f', 'kc'])).toEqual({ cluster_id: c.id, file: 'kc', bytes: Buffer.byteLength(apiKubeconfig) });
      expect(readFileSync(path.join(work, 'kc'), 'utf8')).toBe(apiKubeconfig);
      expect(statSync(path.join(work, 'kc')).mode & 0o777).toBe(0o600);

      // logs: the archive the API serves (controller logs arrive just after installed).
      const apiLogs = await eventually(async () => {
        const r = await fetch(`${h.api.base}/clusters/${c.id}/logs?logs_type=all`);
        return r.status === 200 ? Buffer.from(await r.arrayBuffer()) : undefined;
      }, 20000, 'the cluster logs');
      const logsRun = await landfall(['logs', '--cluster', 'tty', '-f', 'all.tar.gz', '-o', 'json']);
      expect(logsRun.status).toBe(0);
      const saved = readFileSync(path.join(work, 'all.tar.gz'));
      expect(JSON.parse(logsRun.stdout)).toEqual({ cluster_id: c.id, logs_type: 'all', file: 'all.tar.gz', bytes: saved.length, resumed_from: 0, seconds: expect.any(Number) });
      // The same archive members as the API's (the archive is built per request, so its bytes may differ in timestamps).
      const members = (buf: Buffer) => execFileSync('tar', ['tzf', '-'], { input: buf, encoding: 'utf8' }).trim().split('\n').sort();
      expect(members(saved)).toEqual(members(apiLogs));
      expect(members(saved)).toEqual(expect.arrayContaining(['controller.tar.gz', ...hosts.map((x) => expect.stringMatching(new RegExp(`^${x.requested_hostname}_${x.id}`)))]));
    } finally {
      await fleet.report();
    }
  });

  (xorrisoAvailable() ? it : it.skip)('iso download draws a bar with bytes, total and rate', async () => {
    await json(['cluster', 'create', 'tty-iso']);
    const ie = await json(['infraenv', 'create', '--cluster', 'tty-iso']);
    const exitFile = path.join(work, 'iso-exit-code');
    tmux('new-session', '-d', '-x', '160', '-y', '20', '-s', 'iso', `cd ${work} && LANDFALL_URL=${h.api.url} ${process.execPath} ${MAIN} iso download --infra-env ${ie.id} -f tty.iso; echo $? > ${exitFile}; sleep 600`);
    await eventually(async () => existsSync(exitFile) && statSync(exitFile).size > 0, 30000, 'iso download to end');
    expect(readFileSync(exitFile, 'utf8').trim()).toBe('0');
    const size = statSync(path.join(work, 'tty.iso')).size;
    const mib = (size / 1048576).toFixed(1);
    const screen = tmux('capture-pane', '-p', '-t', 'iso');
    expect(screen).toMatch(new RegExp(`^iso \\[█+\\] 100% \\| ${mib} MiB/${mib} MiB \\| [\\d.]+ (KiB|MiB|GiB)/s \\| ETA`, 'm'));
    expect(screen).toMatch(new RegExp(`^wrote tty\\.iso: ${mib} MiB`, 'm'));
  });
});
