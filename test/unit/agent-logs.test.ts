/**
 * The agent's logs archives: the Linux executor gathers real sources and
 * degrades to a note per missing one; the simulated executor says on every
 * file that it is simulated; a failed install uploads its logs by itself.
 */
import { gatherLinuxLogs, LOG_SOURCES } from '../../agent/executors/linux';
import { SimulatedExecutor, SimulatedNetwork, parseProfile } from '../../agent/executors/simulated';
import { runStep, type StepContext } from '../../agent/steps';
import { readTarGz } from '../support/tar-read';

const PROFILE = parseProfile(`
name: failing
cpu: { count: 4 }
memory_gib: 16
disks: [{ name: sda, size_gb: 240 }]
install: { stage_seconds: 0.01, fail_at_stage: Writing image to disk }
`);

function simulatedHost() {
  return new SimulatedExecutor(PROFILE, { id: '11111111-2222-4333-8444-555555555555', mac: '52:54:00:00:00:01', ip: '192.168.127.12', hostname: 'sim-0' }, new SimulatedNetwork());
}

describe('Linux logs gathering', () => {
  it('packs one file per source, a summary and the agent log, even when sources are missing', async () => {
    const sources = [
      { file: 'ip-addr.txt', cmd: 'node', args: ['-e', 'console.log("1: lo: <LOOPBACK>")'], why: 'a command that works' },
      { file: 'missing.log', cmd: 'landfall-no-such-command', args: [], why: 'a command that is not installed' },
      { file: 'failing.log', cmd: 'node', args: ['-e', 'console.error("permission denied"); process.exit(1)'], why: 'a command that fails' },
    ];
    const files = await readTarGz(await gatherLinuxLogs({ reason: 'test' }, { agentLog: ['line one', 'line two'] }, sources));
    expect([...files.keys()]).toEqual(['gather-summary.txt', 'ip-addr.txt', 'missing.log', 'failing.log', 'agent.log']);
    expect(files.get('ip-addr.txt')!.toString()).toContain('1: lo: <LOOPBACK>');
    expect(files.get('missing.log')!.toString()).toBe('unavailable: landfall-no-such-command is not installed\n');
    expect(files.get('failing.log')!.toString()).toMatch(/^unavailable: node failed: .*permission denied/);
    expect(files.get('agent.log')!.toString()).toBe('line one\nline two\n');
    const summary = files.get('gather-summary.txt')!.toString();
    expect(summary).toMatch(/reason: test/);
    expect(summary).toMatch(/^ok {6}ip-addr\.txt/m);
    expect(summary).toMatch(/^missing missing\.log .*not installed/m);
  });

  it('gathers the agent, installer and kernel logs, addresses and disks', () => {
    expect(LOG_SOURCES.map((s) => s.file)).toEqual(expect.arrayContaining(['agent.journal.log', 'installer.journal.log', 'dmesg.log', 'ip-addr.txt', 'lsblk.txt']));
    expect(new Set(LOG_SOURCES.map((s) => s.file)).size).toBe(LOG_SOURCES.length);
  });

  it('works on this machine with whatever it has (no root needed)', async () => {
    const files = await readTarGz(await gatherLinuxLogs({}, undefined));
    for (const s of LOG_SOURCES) expect(files.has(s.file)).toBe(true);
    expect(files.get('gather-summary.txt')!.toString().split('\n').filter((l) => /^(ok|missing) /.test(l))).toHaveLength(LOG_SOURCES.length);
  });
});

describe('simulated logs', () => {
  it('says it is simulated and carries the agent log and what the host did', async () => {
    const host = simulatedHost();
    await host.inventory();
    let archive: Buffer | undefined;
    await host.logsGather({ reason: 'logs-gather' }, async (tgz) => void (archive = tgz), new AbortController().signal, { agentLog: ['2026-01-01T00:00:00Z info registered'] });
    const files = await readTarGz(archive!);
    expect([...files.keys()].sort()).toEqual(['README.txt', 'activity.log', 'agent.log', 'host.json', 'profile.json']);
    expect(files.get('README.txt')!.toString()).toMatch(/^SIMULATED HOST LOGS: sim-0 \(11111111-2222-4333-8444-555555555555\)/);
    expect(files.get('README.txt')!.toString()).toMatch(/nothing here comes from a real operating system/);
    expect(JSON.parse(files.get('host.json')!.toString())).toMatchObject({ simulated: true, host_id: '11111111-2222-4333-8444-555555555555', reason: 'logs-gather' });
    expect(files.get('agent.log')!.toString()).toContain('info registered');
    expect(files.get('activity.log')!.toString()).toMatch(/inventory: reported the simulated hardware/);
  });

  it('a failed install step uploads the host logs (requested, collecting) before it reports the failure', async () => {
    const host = simulatedHost();
    const calls: string[] = [];
    let uploaded: Buffer | undefined;
    const ctx: StepContext = {
      executor: host,
      reportProgress: async (stage) => void calls.push(`stage ${stage}`),
      uploadLogs: async (tgz, meta) => {
        calls.push(`upload ${String(meta.reason)} ${String(meta.cluster_id)}`);
        uploaded = tgz;
      },
      logsProgress: async (state) => void calls.push(`logs ${state}`),
      agentLog: () => ['agent line'],
    };
    const result = await runStep({ step_type: 'install', step_id: 'install-a1', args: [JSON.stringify({ cluster_id: 'c1', role: 'worker' })] }, ctx);
    expect(result.exit_code).toBe(1);
    expect(result.error).toMatch(/simulated failure at stage Writing image to disk/);
    expect(calls.slice(-5)).toEqual(['stage Writing image to disk', 'stage Failed', 'logs requested', 'logs collecting', 'upload install-failed c1']);
    const files = await readTarGz(uploaded!);
    expect(files.get('activity.log')!.toString()).toMatch(/simulated failure at Writing image to disk/);
  });

  it('the logs-gather step reports collecting and uploads with the service-given cluster', async () => {
    const host = simulatedHost();
    const calls: string[] = [];
    const ctx: StepContext = {
      executor: host,
      reportProgress: async () => undefined,
      uploadLogs: async (_tgz, meta) => void calls.push(`upload ${String(meta.cluster_id)} ${String(meta.reason)}`),
      logsProgress: async (state) => void calls.push(`logs ${state}`),
    };
    const result = await runStep({ step_type: 'logs-gather', step_id: 'logs-gather-1', args: [JSON.stringify({ cluster_id: 'c9', host_id: 'h', infra_env_id: 'i', bootstrap: false, installer_gather: true, master_ips: [] })] }, ctx);
    expect(result.exit_code).toBe(0);
    expect(calls).toEqual(['logs collecting', 'upload c9 logs-gather']);
  });
});
