/**
 * The discovery OS's Ignition applier (discovery-os/ignition-apply.ts) on the
 * configs Landfall really generates, into a scratch root; and its cpio writer.
 * The boot test (test/vm) runs both inside the OS; these pin the details.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { discoveryIgnition, mergeIgnition } from '../../src/domain/discovery-ignition';
import { staticNetworkKeyfiles } from '../../src/domain/static-network';
import { applyIgnition, decodeDataUrl, IgnitionError, networkScript, parseServiceUnit, splitCommandLine } from '../../discovery-os/ignition-apply';
import { deviceEntry, newcArchive, treeEntries } from '../../discovery-os/mkcpio';
import { tempDir } from '../support/services';

const base = { serviceBaseUrl: 'http://10.0.2.100:8090', infraEnvId: '0f6c3c1e-8a3c-4d5e-9f00-123456789abc', agentToken: 'tok.en.sig' };
const MAC = '52:54:00:aa:bb:01';

describe('discovery OS Ignition applier', () => {
  it('decodes percent-encoded and base64 data URLs to bytes', () => {
    expect(decodeDataUrl('data:,a%3Db%0A%E2%82%AC').toString('utf8')).toBe('a=b\n€');
    expect(decodeDataUrl('data:text/plain;charset=utf-8;base64,aGVsbG8=').toString()).toBe('hello');
    expect([...decodeDataUrl('data:,%FF%00')]).toEqual([0xff, 0x00]);
    expect(() => decodeDataUrl('https://example.com/x')).toThrow(IgnitionError);
  });

  it("applies Landfall's discovery Ignition: files with their modes, the agent's runner, static network, NTP, SSH keys", async () => {
    const keyfiles = staticNetworkKeyfiles([
      {
        network_yaml: [
          'interfaces:',
          '  - name: eth0',
          '    type: ethernet',
          '    state: up',
          '    mtu: 9000',
          '    ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.10, prefix-length: 24}]}',
          'routes: {config: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0}]}',
          'dns-resolver: {config: {server: [192.0.2.53]}}',
        ].join('\n'),
        mac_interface_map: [{ mac_address: MAC, logical_nic_name: 'eth0' }],
      },
    ]);
    const cfg = discoveryIgnition({ ...base, networkKeyfiles: keyfiles, additionalNtpSources: 'ntp.example.com', additionalTrustBundle: '-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n', sshAuthorizedKey: 'ssh-ed25519 AAAA a@b' });
    const root = tempDir('applier-root');
    const runDir = tempDir('applier-run');
    const report = await applyIgnition(JSON.parse(JSON.stringify(cfg)), { root, runDir, logDir: path.join(runDir, 'log') });

    const env = readFileSync(path.join(root, 'etc/landfall/agent.env'), 'utf8');
    expect(env).toContain(`LANDFALL_SERVICE_URL=${base.serviceBaseUrl}\n`);
    expect(env).toContain('LANDFALL_AGENT_TOKEN=tok.en.sig\n');
    expect(statSync(path.join(root, 'etc/landfall/agent.env')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(root, 'etc/pki/ca-trust/source/anchors/landfall-additional.pem'), 'utf8')).toContain('BEGIN CERTIFICATE');
    expect(readFileSync(path.join(root, 'root', '../home/core/.ssh/authorized_keys'), 'utf8')).toBe('ssh-ed25519 AAAA a@b\n');
    expect(report.warnings.join('\n')).toMatch(/runs no SSH server/);
    expect(readFileSync(path.join(root, 'etc/systemd/system/landfall-agent.service'), 'utf8')).toContain('ExecStart=/usr/local/bin/landfall-agent');

    // The agent's unit becomes a runner that reads the env file and execs ExecStart, respawned after RestartSec.
    expect(report.services).toEqual(['landfall-agent.service']);
    const runner = readFileSync(path.join(runDir, 'services/landfall-agent.service.sh'), 'utf8');
    expect(runner).toContain("done < '/etc/landfall/agent.env'");
    expect(runner).toContain("'/usr/local/bin/landfall-agent' 2>&1 | tee -a");
    expect(runner).toMatch(/sleep 5; fi/);

    // The keyfile for the MAC becomes the commands /init runs for that NIC instead of DHCP.
    expect(report.networkProfiles).toEqual([`mac-${MAC}`]);
    expect(readFileSync(path.join(runDir, `network/mac-${MAC}`), 'utf8').split('\n')).toEqual([
      '# static4',
      'ip link set dev "$IFACE" mtu 9000',
      'ip link set dev "$IFACE" up',
      'ip -4 addr add 192.0.2.10/24 dev "$IFACE"',
      'ip -4 route replace default via 192.0.2.1 dev "$IFACE"',
      'echo nameserver 192.0.2.53 >> /etc/resolv.conf',
      'echo 1 > "/proc/sys/net/ipv6/conf/$IFACE/disable_ipv6" 2>/dev/null || true',
      '',
    ]);
    expect(readFileSync(path.join(runDir, 'ntp-servers'), 'utf8')).toBe('ntp.example.com\n');
  });

  it('runs a service the way systemd would: EnvironmentFile, Environment, ExecStart with quotes', async () => {
    const root = tempDir('applier-root');
    const runDir = tempDir('applier-run');
    const envFile = path.join(root, 'svc.env');
    const out = path.join(root, 'out.txt');
    const unit = `[Unit]\nDescription=t\n[Service]\nEnvironmentFile=${envFile}\nEnvironmentFile=-/nonexistent/optional.env\nEnvironment="GREETING=hello world" OTHER=x\nExecStart=/bin/sh -c 'echo "$A|$GREETING|$OTHER" > ${out}'\nRestart=always\nRestartSec=1\n`;
    const cfg = mergeIgnition(discoveryIgnition(base), {
      ignition: { version: '3.4.0' },
      storage: { files: [{ path: '/svc.env', mode: 0o600, overwrite: true, contents: { source: 'data:;base64,' + Buffer.from('# comment\nA=1 2 3\n').toString('base64') } }] },
      systemd: { units: [{ name: 'landfall-agent.service', enabled: true, contents: unit }, { name: 'other.timer', enabled: true, contents: '[Timer]\n' }] },
    });
    const report = await applyIgnition(cfg, { root, runDir, logDir: path.join(runDir, 'log') });
    expect(report.warnings).toContain('other.timer: only .service units are run: ignored');
    execFileSync('sh', [path.join(runDir, 'services/landfall-agent.service.sh')]);
    expect(readFileSync(out, 'utf8')).toBe('1 2 3|hello world|x\n');
    expect(readFileSync(path.join(runDir, 'log/landfall-agent.service.log'), 'utf8')).toContain('landfall-agent.service starting');
  });

  it('refuses configs it cannot honour rather than half-applying them', async () => {
    const root = tempDir('applier-root');
    const runDir = tempDir('applier-run');
    await expect(applyIgnition({ ignition: { version: '2.2.0' } }, { root, runDir })).rejects.toThrow(/not 3\.x/);
    await expect(applyIgnition({ ignition: { version: '3.4.0' }, storage: { files: [{ path: '/x', contents: { source: 's3://bucket/x' } }] } }, { root, runDir })).rejects.toThrow(/only data: and http\(s\) sources/);
    await expect(applyIgnition({ ignition: { version: '3.4.0' }, storage: { files: [{ path: '/../../etc/passwd', contents: { source: 'data:,x' } }] } }, { root, runDir })).resolves.toBeDefined();
    // ".." is resolved inside the root, never above it.
    expect(readFileSync(path.join(root, 'etc/passwd'), 'utf8')).toBe('x');
    const hash = 'sha256-' + '0'.repeat(64);
    await expect(applyIgnition({ ignition: { version: '3.4.0' }, storage: { files: [{ path: '/y', contents: { source: 'data:,y', verification: { hash } } }] } }, { root, runDir })).rejects.toThrow(/sha256 mismatch/);
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    writeFileSync(path.join(root, 'etc/keep'), 'old');
    await expect(applyIgnition({ ignition: { version: '3.4.0' }, storage: { files: [{ path: '/etc/keep', contents: { source: 'data:,new' } }] } }, { root, runDir })).rejects.toThrow(/overwrite is not true/);
  });

  it('applies a role Ignition in the installed OS with --skip-services: files written, units written but not run', async () => {
    const root = tempDir('applier-root');
    const runDir = tempDir('applier-run');
    const unit = '[Service]\nType=oneshot\nExecStart=/usr/bin/kubeadm init --config /etc/landfall/kubeadm.yaml\n[Install]\nWantedBy=multi-user.target\n';
    const cfg = { ignition: { version: '3.4.0' }, storage: { files: [{ path: '/etc/landfall/kubeadm.yaml', mode: 0o600, contents: { source: 'data:,kind%3A%20InitConfiguration' } }] }, systemd: { units: [{ name: 'landfall-kubeadm.service', enabled: true, contents: unit }] } };
    const report = await applyIgnition(cfg, { root, runDir, skipServices: true });
    expect(readFileSync(path.join(root, 'etc/landfall/kubeadm.yaml'), 'utf8')).toBe('kind: InitConfiguration');
    expect(readFileSync(path.join(root, 'etc/systemd/system/landfall-kubeadm.service'), 'utf8')).toBe(unit);
    expect(report).toMatchObject({ services: [], skippedServices: ['landfall-kubeadm.service'] });
    expect(readdirSync(path.join(runDir, 'services'))).toEqual([]);
  });

  it('parses unit and keyfile details', () => {
    expect(splitCommandLine(`/bin/a "b c" 'd e' f\\ g`)).toEqual(['/bin/a', 'b c', 'd e', 'f g']);
    expect(parseServiceUnit('[Service]\nExecStart=-/bin/x --y\nRestart=on-failure\nRestartSec=3s\n')).toMatchObject({ execStart: ['/bin/x', '--y'], restart: 'on-failure', restartSec: 3 });
    expect(networkScript('[connection]\ntype=ethernet\ninterface-name=eno1\n[ipv4]\nmethod=auto\n[ipv6]\nmethod=ignore\n')!.file).toBe('if-eno1');
    expect(networkScript('[connection]\ntype=ethernet\n[ipv4]\nmethod=auto\n')).toBeUndefined();
    expect(() => networkScript('[connection]\ntype=ethernet\ninterface-name=x\n[ipv4]\nmethod=manual\naddress1=1.2.3.4/24;rm -rf /\n')).toThrow(/not an address/);
  });
});

describe('discovery OS cpio writer', () => {
  /** Reads back a newc archive: name, mode, mtime, data of each entry. */
  function readNewc(buf: Buffer) {
    const out: Array<{ name: string; mode: number; mtime: number; data: Buffer; rdev: [number, number] }> = [];
    let pos = 0;
    const up4 = (n: number) => (n + 3) & ~3;
    for (;;) {
      expect(buf.toString('ascii', pos, pos + 6)).toBe('070701');
      const f = (i: number) => parseInt(buf.toString('ascii', pos + 6 + i * 8, pos + 14 + i * 8), 16);
      const nameSize = f(11);
      const size = f(6);
      const name = buf.toString('utf8', pos + 110, pos + 110 + nameSize - 1);
      const dataAt = up4(pos + 110 + nameSize);
      if (name === 'TRAILER!!!') return out;
      out.push({ name, mode: f(1), mtime: f(5), data: buf.subarray(dataAt, dataAt + size), rdev: [f(9), f(10)] });
      pos = up4(dataAt + size);
    }
  }

  it('archives a tree sorted, parents first, with fixed times, links and device nodes', () => {
    const dir = tempDir('cpio');
    mkdirSync(path.join(dir, 'usr/bin'), { recursive: true });
    writeFileSync(path.join(dir, 'usr/bin/tool'), 'abc', { mode: 0o755 });
    writeFileSync(path.join(dir, 'init'), '#!/bin/sh\n', { mode: 0o700 });
    execFileSync('ln', ['-s', '/usr/bin/tool', path.join(dir, 'link')]);
    const entries = [...treeEntries(dir), deviceEntry('dev/console:c:5:1:600')].sort((a, b) => (a.name < b.name ? -1 : 1));
    const back = readNewc(newcArchive(entries, 1735689600));
    expect(back.map((e) => e.name)).toEqual(['dev/console', 'init', 'link', 'usr', 'usr/bin', 'usr/bin/tool']);
    const by = Object.fromEntries(back.map((e) => [e.name, e]));
    expect(by['usr/bin/tool']!.mode).toBe(0o100755);
    expect(by['usr/bin/tool']!.data.toString()).toBe('abc');
    expect(by['init']!.mode).toBe(0o100700);
    expect(by['link']!.mode).toBe(0o120777);
    expect(by['link']!.data.toString()).toBe('/usr/bin/tool');
    expect(by['usr']!.mode & 0o170000).toBe(0o040000);
    expect(by['dev/console']).toMatchObject({ mode: 0o020600, rdev: [5, 1] });
    for (const e of back) expect(e.mtime).toBe(1735689600);
    // The same tree gives the same bytes.
    expect(newcArchive(entries, 1735689600).equals(newcArchive([...treeEntries(dir), deviceEntry('dev/console:c:5:1:600')].sort((a, b) => (a.name < b.name ? -1 : 1)), 1735689600))).toBe(true);
  });
});
