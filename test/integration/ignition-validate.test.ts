/**
 * Every Ignition config Landfall generates passes the real ignition-validate
 * (github.com/coreos/ignition/v2/validate, built by scripts/install-ignition-validate.sh).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../../src/dev/process-utils';
import { generateClusterPki } from '../../src/install/pki';
import { roleIgnition } from '../../src/install/role-ignition';
import { discoveryIgnition } from '../../src/domain/discovery-ignition';
import { day2JoinIgnition, importedClusterPointerIgnition } from '../../src/install/day2-ignition';
import { mintJoinCredential } from '../../src/install/pki';
import { tempDir } from '../support/services';

const VALIDATE = path.join(toolsDir(), 'bin', 'ignition-validate');
const dir = tempDir('ignition');

function validate(name: string, config: unknown): { status: number | null; out: string } {
  const file = path.join(dir, `${name}.ign`);
  writeFileSync(file, JSON.stringify(config));
  const r = spawnSync(VALIDATE, [file], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('ignition-validate', () => {
  const pki = generateClusterPki();
  const topology = { clusterName: 'demo', kubernetesVersion: '1.31.4', controlPlaneEndpoint: '192.168.127.250:6443', bootstrapAddress: '192.168.127.12', podSubnet: '10.128.0.0/14', serviceSubnet: '172.30.0.0/16', sshAuthorizedKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m a@b' };

  it.each(['bootstrap', 'master', 'worker'] as const)('accepts the %s Ignition', (role) => {
    const r = validate(role, roleIgnition(role, pki, topology));
    expect([r.status, r.out]).toEqual([0, '']);
  });

  it('accepts the discovery Ignition, with an override merged in', () => {
    const cfg = discoveryIgnition({
      serviceBaseUrl: 'https://landfall.example.com',
      infraEnvId: '6d3f8a4e-0000-4000-8000-000000000001',
      agentToken: 'a.b.c',
      sshAuthorizedKey: topology.sshAuthorizedKey,
      proxy: { http_proxy: 'http://proxy:3128' },
      additionalNtpSources: 'ntp.example.com',
      ignitionConfigOverride: JSON.stringify({ ignition: { version: '3.2.0' }, storage: { files: [{ path: '/etc/motd', contents: { source: 'data:,hello' } }] } }),
      networkKeyfiles: [{ name: 'landfall-525400000001.nmconnection', contents: '[connection]\nid=x\ntype=ethernet\n' }],
    });
    const r = validate('discovery', cfg);
    expect([r.status, r.out]).toEqual([0, '']);
  });

  it('accepts the day-2 join Ignition and the pointer Ignition of an imported cluster', () => {
    const cred = mintJoinCredential(pki, 3600_000);
    const join = validate('day2-join', day2JoinIgnition(pki, { clusterName: 'demo', controlPlaneEndpoint: '192.168.127.250:6443', nodeName: 'worker-4', sshAuthorizedKey: topology.sshAuthorizedKey }, cred));
    expect([join.status, join.out]).toEqual([0, '']);
    const pointer = validate('day2-pointer', importedClusterPointerIgnition('api.prod.example.org'));
    expect([pointer.status, pointer.out]).toEqual([0, '']);
    // The join credential chains to the cluster CA (openssl, not our own code, says so).
    const caFile = path.join(dir, 'ca-day2.pem');
    const credFile = path.join(dir, 'join.pem');
    writeFileSync(caFile, pki.ca.certPem);
    writeFileSync(credFile, cred.certPem);
    expect(execFileSync('openssl', ['verify', '-CAfile', caFile, credFile], { encoding: 'utf8' })).toContain('OK');
    expect(Date.parse(cred.notAfter) - Date.now()).toBeLessThanOrEqual(3600_000);
  });

  it('is a real validator: it rejects a broken config', () => {
    const r = validate('broken', { ignition: { version: '3.4.0' }, storage: { files: [{ path: 'relative/path', contents: { source: 'data:,x' } }] } });
    expect(r.status).not.toBe(0);
    expect(r.out).toMatch(/path/i);
  });

  it('the kubeadm certificates chain to the cluster CA', () => {
    const caFile = path.join(dir, 'ca.pem');
    const adminFile = path.join(dir, 'admin.pem');
    writeFileSync(caFile, pki.ca.certPem);
    writeFileSync(adminFile, pki.admin.certPem);
    expect(execFileSync('openssl', ['verify', '-CAfile', caFile, adminFile], { encoding: 'utf8' })).toContain('OK');
    expect(pki.bootstrapToken).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(pki.caCertHash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
