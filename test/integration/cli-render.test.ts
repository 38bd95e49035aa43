/**
 * The CLI's pure pieces, without a service: the Server-Sent Events reader
 * across arbitrary chunk boundaries, and what people read (tables, the
 * failing-validation lines, the install report summary).
 */
import { parseSse } from '../../src/cli/event-stream';
import { failingValidations, hostsTable } from '../../src/cli/commands/hosts';
import { reportText } from '../../src/cli/commands/report';
import { atLeast } from '../../src/cli/commands/events';
import { clusterPercentage } from '../../src/cli/install-view';
import { bytes, duration, table } from '../../src/cli/output';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function collect(chunks: string[]) {
  const out = [];
  for await (const m of parseSse(streamOf(chunks), new AbortController().signal)) out.push(m);
  return out;
}

describe('Server-Sent Events reader', () => {
  const wire = 'id: 7\nevent: host_registered\ndata: {"message":"a"}\n\n: keep-alive\n\nid: 8\r\ndata: {"message":\r\ndata: "b"}\r\n\r\n';
  const expected = [
    { id: '7', event: 'host_registered', data: '{"message":"a"}' },
    { id: '8', data: '{"message":\n"b"}' },
  ];

  it('reads messages, multi-line data and CRLF, and skips comments', async () => {
    expect(await collect([wire])).toEqual(expected);
  });

  it.each([1, 2, 3, 5, 11])('gives the same messages when the bytes arrive %i at a time', async (n) => {
    const chunks = [];
    for (let i = 0; i < wire.length; i += n) chunks.push(wire.slice(i, i + n));
    expect(await collect(chunks)).toEqual(expected);
  });
});

describe('hosts table', () => {
  const host = {
    id: '11111111-2222-4333-8444-555555555555',
    status: 'insufficient',
    status_info: 'Host does not meet the minimum hardware requirements',
    role: 'auto-assign',
    suggested_role: 'worker',
    inventory: JSON.stringify({ hostname: 'small-0', cpu: { count: 1 }, memory: { physical_bytes: 4 * 1024 ** 3 }, disks: [{ size_bytes: 16 * 1024 ** 3 }] }),
    validations_info: JSON.stringify({ hardware: [{ id: 'has-min-cpu-cores', status: 'failure', message: 'The host has 1 CPU core; 2 are required' }, { id: 'has-inventory', status: 'success', message: 'ok' }] }),
    validation_remediation: JSON.stringify({ 'has-min-cpu-cores': { cause: 'cpu-cores-below-minimum', hint: 'give the host at least 2 cores', blocking: true }, 'ntp-synced': { cause: 'clock-skew', hint: 'point the host at an NTP server', blocking: false } }),
  };

  it('pairs each failing validation with its remediation, including ones only the remediation names', () => {
    expect(failingValidations(host)).toEqual([
      { id: 'has-min-cpu-cores', message: 'The host has 1 CPU core; 2 are required', cause: 'cpu-cores-below-minimum', hint: 'give the host at least 2 cores', blocking: true },
      { id: 'ntp-synced', cause: 'clock-skew', hint: 'point the host at an NTP server', blocking: false },
    ]);
  });

  it('prints hardware from the inventory and a fix line per failing validation', () => {
    const out = hostsTable([host]);
    expect(out).toMatch(/^small-0 +worker\* +insufficient +1 +4\.0 GiB +16\.0 GiB +- +2$/m);
    expect(out).toContain('  ✗ has-min-cpu-cores: cpu-cores-below-minimum\n    fix: give the host at least 2 cores\n');
    expect(out).toContain('  ✗ ntp-synced (warning): clock-skew\n');
  });
});

describe('install report summary', () => {
  const report = {
    cluster_id: 'c1',
    cluster_name: 'lab',
    status: 'error',
    status_info: 'Cluster installation failed',
    openshift_version: '1.31',
    install_attempt: 2,
    outcome: 'failed',
    started_at: '2026-01-01T10:00:00Z',
    completed_at: '2026-01-01T10:03:10Z',
    duration_seconds: 190,
    failure: { host_id: 'h2', hostname: 'worker-1', role: 'worker', stage: 'Writing image to disk', cause: 'coreos-installer: I/O error', remediation: 'check the disk' },
    hosts: [
      { host_id: 'h1', hostname: 'master-0', role: 'master', bootstrap: true, status: 'installed', stages: [{ stage: 'Installing', duration_seconds: 30 }, { stage: 'Done', duration_seconds: 0 }], retries: 0, warnings: [], failure: null },
      { host_id: 'h2', hostname: 'worker-1', role: 'worker', bootstrap: false, status: 'error', stages: [{ stage: 'Writing image to disk', duration_seconds: 65 }], retries: 1, warnings: [{ at: '2026-01-01T10:02:00Z', message: 'slow' }], failure: { stage: 'Writing image to disk', cause: 'coreos-installer: I/O error', remediation: 'check the disk' } },
    ],
    warnings: [{ at: '2026-01-01T10:02:00Z', host_id: 'h2', message: 'stage Writing image to disk is slow' }],
    timeline: [{ at: '2026-01-01T10:00:00Z', name: 'cluster_installation_started', severity: 'info', message: 'started', host_id: null }],
  };

  it('leads with the outcome and the failing host, stage, cause and remediation', () => {
    const text = reportText(report);
    expect(text.split('\n').slice(0, 7)).toEqual([
      'cluster lab (c1): FAILED',
      '  status error: Cluster installation failed',
      '  release 1.31, attempt 2, started 2026-01-01T10:00:00Z, completed 2026-01-01T10:03:10Z (3m10s)',
      '',
      'failure: host worker-1 (worker) at stage "Writing image to disk"',
      '  cause:       coreos-installer: I/O error',
      '  remediation: check the disk',
    ]);
    expect(text).toMatch(/^master-0 +master \(bootstrap\) +installed +Done +30s +0 +0$/m);
    expect(text).toMatch(/^worker-1 +worker +error +Writing image to disk +1m05s +1 +1 +Writing image to disk: coreos-installer: I\/O error$/m);
    expect(text).toContain('  10:02:00 worker-1: stage Writing image to disk is slow');
    expect(text).not.toContain('timeline:');
    expect(reportText(report, { timeline: true })).toContain('timeline:\n  10:00:00 info     started');
  });

  it('says a not-started install plainly', () => {
    expect(reportText({ ...report, outcome: 'not-started', failure: null, hosts: [], warnings: [], started_at: null, completed_at: null, duration_seconds: null })).toBe(
      'cluster lab (c1): NOT-STARTED\n  status error: Cluster installation failed\n  release 1.31, attempt 2\n',
    );
  });
});

describe('small formatters', () => {
  it('aligns table columns and shows missing cells as -', () => {
    expect(table(['A', 'LONG'], [['xxx', undefined], ['y', 'z']])).toBe('A    LONG\nxxx  -\ny    z\n');
  });
  it('formats sizes and durations', () => {
    expect([bytes(0), bytes(1536), bytes(4 * 1024 ** 3), bytes(undefined)]).toEqual(['0 B', '1.5 KiB', '4.0 GiB', undefined]);
    expect([duration(5), duration(65), duration(3725), duration(null)]).toEqual(['5s', '1m05s', '1h02m', undefined]);
  });
  it('--severity means that level and worse', () => {
    expect(atLeast('warning')).toEqual(['warning', 'error', 'critical']);
    expect(atLeast(undefined)).toEqual(['info', 'warning', 'error', 'critical']);
  });
  it('the cluster bar follows the hosts while the API total is still 0', () => {
    const hosts = [{ progress: { installation_percentage: 40 } }, { progress: { installation_percentage: 20 } }];
    expect(clusterPercentage({ status: 'installing', progress: { total_percentage: 0 }, hosts })).toBe(30);
    expect(clusterPercentage({ status: 'installed', progress: { total_percentage: 100 }, hosts })).toBe(100);
    expect(clusterPercentage({ status: 'preparing-for-installation', progress: {}, hosts })).toBe(0);
  });
});
