/**
 * The real upstream assisted-installer agent as Landfall's peer: three agents,
 * each a discovery host in its own network and PID namespace (see
 * test/support/upstream-agents.ts), register, report hardware, measure each
 * other with real pings, ask NTP and DNS servers on their network, scan for
 * free addresses and measure their install disk. Landfall must bring every
 * host to `known` and the cluster to `ready`, hand out an install step the
 * agent accepts, then stop the install and collect each host's logs, without
 * answering any agent request with an error.
 *
 * The agent polls every 60 s when the service asks it to; the recording proxy
 * shortens that to 3 s (nothing else in any answer changes).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { call, PULL_SECRET } from '../support/api-harness';
import { tempDir } from '../support/services';
import { startAgentLab, upstreamAgentPrerequisites, upstreamAgentUnavailable, type AgentLab } from '../support/upstream-agents';
import type { Exchange } from '../support/agent-api-proxy';

const SUBNET = '192.168.131';
const API_VIP = `${SUBNET}.250`;
const INGRESS_VIP = `${SUBNET}.251`;
const CLUSTER = 'lab';
const BASE_DOMAIN = 'lab.test';

const unavailable = upstreamAgentUnavailable();
let h: InstallHarness | undefined;
let lab: AgentLab | undefined;

beforeAll(async () => {
  if (unavailable) return;
  // Past the checks above, a missing prerequisite (netns, a host command) is a failure, not a skip.
  const { skip } = await upstreamAgentPrerequisites();
  if (skip) throw new Error(skip);
  // The lab's hosts are this machine: 2 cores, and a scratch loop device behind a file on its disk.
  const requirements = path.join(tempDir('lab-requirements'), 'requirements.json');
  const lab = { cpuCores: 2, ramMib: 4096, diskSyncSoftMs: 1000, diskSyncHardMs: 5000 };
  writeFileSync(requirements, JSON.stringify({ master: lab, worker: lab }));
  h = await startInstallHarness({ HOST_REQUIREMENTS_FILE: requirements, HOST_MONITOR_INTERVAL_MS: '2000' });
}, 120_000);

afterAll(async () => {
  // Every agent request and the API's answer, for reading a failure after the fact (CI keeps test-artifacts/).
  if (lab) {
    mkdirSync('test-artifacts', { recursive: true });
    writeFileSync('test-artifacts/upstream-agent-exchanges.json', JSON.stringify(lab.proxy.exchanges, null, 1));
  }
  await lab?.destroy();
  await h?.stop();
}, 60_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the API's JSON, read loosely
type Json = any;

const isAgentPath = (x: Exchange) => /^\/api\/assisted-install\/v2\/(infra-envs|clusters)\//.test(x.url);
const failures = (l: AgentLab) => l.proxy.exchanges.filter((x) => x.status >= 400);
/** Replies in which the agent refused a step's arguments: its own validation answers exit code -1 with the reason. */
const refusals = (l: AgentLab) =>
  l.proxy.exchanges
    .filter((x) => x.method === 'POST' && /\/instructions$/.test(x.url))
    .map((x) => JSON.parse(x.requestBody) as Json)
    .filter((r) => r.exit_code === -1)
    .map((r) => `${r.step_type} ${r.step_id}: ${r.error}`);
const describeExchange = (x: Exchange) => `${x.method} ${x.url} → ${x.status}\n  request: ${x.requestBody.slice(0, 600)}\n  response: ${x.responseBody.slice(0, 600)}`;

/**
 * Polls `fn` until it gives a value; fails at once when an agent request was
 * answered with an error or an agent refused a step, since either is already
 * the failure (and the wait would only end in a time-out).
 */
async function until<T>(l: AgentLab, what: string, timeoutMs: number, fn: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const bad = [...failures(l).map(describeExchange), ...refusals(l)];
    if (bad.length) throw new Error(`while waiting for ${what}: ${bad.slice(0, 10).join('\n')}`);
    const value = await fn().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Replies the agents posted, parsed, for one step type. */
function replies(l: AgentLab, stepType: string): Array<{ hostId: string; status: number; reply: Json }> {
  return l.proxy.exchanges
    .filter((x) => x.method === 'POST' && /\/hosts\/[^/]+\/instructions$/.test(x.url))
    .map((x) => ({ hostId: /\/hosts\/([^/]+)\/instructions$/.exec(x.url)![1]!, status: x.status, reply: JSON.parse(x.requestBody) }))
    .filter((r) => r.reply.step_type === stepType);
}

// Skipped, with the reason in its name, only when the agent cannot be had here (see upstreamAgentUnavailable).
(unavailable ? describe.skip : describe)(`upstream assisted-installer agent${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  it('three agents drive discovery to ready, accept the install step, stop and upload their logs', async () => {
    const api = h!.api;
    const cluster = (
      await call('POST', `${api.base}/clusters`, {
        body: { name: CLUSTER, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: BASE_DOMAIN, machine_networks: [{ cidr: `${SUBNET}.0/24` }], api_vips: [{ ip: API_VIP }], ingress_vips: [{ ip: INGRESS_VIP }] },
      })
    ).body;
    expect(cluster.id).toBeDefined();
    const infraEnv = (await call('POST', `${api.base}/infra-envs`, { body: { name: 'lab-ie', pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
    expect(infraEnv.id).toBeDefined();

    lab = await startAgentLab({ count: 3, subnet: SUBNET, apiUrl: api.url, infraEnvId: infraEnv.id, clusterName: CLUSTER, baseDomain: BASE_DOMAIN, apiVip: API_VIP, ingressVip: INGRESS_VIP, maxPollSeconds: 3 });
    const l = lab;
    const diagnose = async (what: string, err: Error) => {
      const c = (await call('GET', `${api.base}/clusters/${cluster.id}`)).body;
      const failing = (v: string | undefined) =>
        Object.values(JSON.parse(v ?? '{}') as Record<string, Json[]>)
          .flat()
          .filter((x) => x.status !== 'success')
          .map((x) => `${x.id}: ${x.message}`)
          .join('; ');
      const hosts = (c.hosts ?? []).map((x: Json) => `${x.id} ${x.role}/${x.suggested_role} ${x.status}: ${x.status_info} [${failing(x.validations_info)}]`).join('\n');
      return new Error(
        `${what}: ${err.message}\ncluster ${c.status}: ${c.status_info} [${failing(c.validations_info)}]\n${hosts}\n` +
          `failed agent requests:\n${failures(l).slice(0, 10).map(describeExchange).join('\n') || '(none)'}\n` +
          `steps the agent refused:\n${[...new Set(refusals(l))].slice(0, 10).join('\n') || '(none)'}\n` +
          l.hosts.map((x) => `=== host ${x.index}\n${l.logs(x.index, 3000)}`).join('\n'),
      );
    };

    // Discovery: every host registers and reports its hardware.
    const discovered = await until(l, 'three hosts with an inventory', 180_000, async () => {
      const list = (await call('GET', `${api.base}/infra-envs/${infraEnv.id}/hosts`)).body as Json[];
      return list.length === 3 && list.every((x) => x.inventory) ? list : undefined;
    }).catch(async (err) => {
      throw await diagnose('registration and inventory', err);
    });
    // The lab's hosts have 2 cores, under the default master minimum the role suggestion uses
    // (it does not read HOST_REQUIREMENTS_FILE): the user makes them control-plane nodes.
    for (const x of discovered) expect((await call('PATCH', `${api.base}/infra-envs/${infraEnv.id}/hosts/${x.id}`, { body: { host_role: 'master' } })).status).toBe(201);

    // Every host is validated known from its own checks; the cluster becomes ready.
    const ready = await until(l, 'three known hosts and a ready cluster', 360_000, async () => {
      const c = (await call('GET', `${api.base}/clusters/${cluster.id}`)).body;
      return c.status === 'ready' && c.hosts.length === 3 && c.hosts.every((x: Json) => x.status === 'known') ? c : undefined;
    }).catch(async (err) => {
      throw await diagnose('discovery', err);
    });

    const hosts: Json[] = [];
    for (const x of ready.hosts) hosts.push((await call('GET', `${api.base}/infra-envs/${infraEnv.id}/hosts/${x.id}`)).body);
    const ips = l.hosts.map((x) => x.ip).sort();
    const hostIp = (host: Json) => JSON.parse(host.inventory).interfaces.flatMap((i: Json) => i.ipv4_addresses).map((a: string) => a.split('/')[0]).find((a: string) => ips.includes(a));
    // Each host is a distinct lab host: distinct ids, each with its own namespace's address and hostname.
    expect(new Set(hosts.map((x) => x.id)).size).toBe(3);
    expect(hosts.map(hostIp).sort()).toEqual(ips);
    expect(hosts.map((x) => JSON.parse(x.inventory).hostname).sort()).toEqual(l.hosts.map((x) => x.hostname).sort());

    for (const host of hosts) {
      const inventory = JSON.parse(host.inventory);
      expect(inventory.cpu.count).toBeGreaterThan(0);
      expect(inventory.memory.physical_bytes).toBeGreaterThan(0);
      expect(inventory.disks.length).toBeGreaterThan(0);
      expect(inventory.routes.some((r: Json) => r.gateway === l.switchIp)).toBe(true);

      // Connectivity from real pings: each peer reachable at its lab address. (The agent probes
      // L2 and MTU only from NICs it sees as physical; the lab's veth NICs are virtual.)
      const report = JSON.parse(host.connectivity);
      const peers = hosts.filter((x) => x.id !== host.id);
      for (const peer of peers) {
        const remote = report.remote_hosts.find((r: Json) => r.host_id === peer.id);
        expect(remote).toBeDefined();
        const l3 = remote.l3_connectivity.find((c: Json) => c.remote_ip_address === hostIp(peer));
        expect(l3.successful).toBe(true);
        // The agent leaves a zero loss out of its report.
        expect(l3.packet_loss_percentage ?? 0).toBe(0);
        expect(l3.average_rtt_ms).toBeGreaterThan(0);
      }

      // NTP: the host's chronyd follows the switch's and says so.
      const ntp = JSON.parse(host.ntp_sources);
      expect(ntp).toContainEqual(expect.objectContaining({ source_name: l.switchIp, source_state: 'synced' }));

      // DNS: the lab's dnsmasq answers for the cluster's names, not for the wildcard probe.
      const dns = JSON.parse(host.domain_name_resolutions).resolutions;
      const resolved = (name: string) => dns.find((r: Json) => r.domain_name === name)?.ipv4_addresses ?? [];
      expect(resolved(`api.${CLUSTER}.${BASE_DOMAIN}`)).toEqual([API_VIP]);
      expect(resolved(`validateNoWildcardDNS.${CLUSTER}.${BASE_DOMAIN}`)).toEqual([]);
    }

    // Free addresses come from a real ARP sweep: the hosts and the switch are taken, the VIPs free.
    // (A single GET of a host clears them, as in assisted-service; the list carries them.)
    const listed = (await call('GET', `${api.base}/infra-envs/${infraEnv.id}/hosts`)).body as Json[];
    for (const host of listed) {
      const free = JSON.parse(host.free_addresses ?? '[]').find((n: Json) => n.network === `${SUBNET}.0/24`)?.free_addresses ?? [];
      expect(free).toContain(API_VIP);
      for (const taken of [...ips, l.switchIp]) expect(free).not.toContain(taken);
    }

    // Every host is in the majority group, worked out from the three hosts' ping reports.
    for (const host of hosts) {
      const validations = Object.values(JSON.parse(host.validations_info) as Record<string, Json[]>).flat();
      expect(validations.find((v) => v.id === 'belongs-to-majority-group')).toMatchObject({ status: 'success' });
    }

    expect(failures(l).map(describeExchange)).toEqual([]);
    expect(refusals(l)).toEqual([]);

    // Install: the disk speed check runs on each host's install disk, then the install step.
    expect((await call('POST', `${api.base}/clusters/${cluster.id}/actions/install`)).status).toBe(202);
    await until(l, 'every agent starting the installer', 300_000, async () => l.hosts.every((x) => l.installerRuns(x.index).length > 0)).catch(async (err) => {
      throw await diagnose('install', err);
    });
    const speed = replies(l, 'installation-disk-speed-check');
    expect(new Set(speed.map((r) => r.hostId)).size).toBe(3);
    for (const r of speed) {
      expect(r.reply.exit_code ?? 0).toBe(0);
      const out = JSON.parse(r.reply.output);
      expect(out.path).toMatch(/^\/dev\//);
      // Milliseconds; the agent leaves out a 0 (a scratch file syncs in under a millisecond).
      expect(out.io_sync_duration ?? 0).toBeGreaterThanOrEqual(0);
    }
    // fio really ran, on the disk the service named, which on each host is its scratch device.
    for (const x of l.hosts) {
      const targets = l.fioTargets(x.index);
      expect(targets.length).toBeGreaterThan(0);
      for (const t of targets) expect(t.device).toBe(await l.scratchDevice(x.index));
    }
    // The agent validates the install step's arguments (InstallCmdRequest) before it runs
    // anything; a refusal is an exit code of -1 with the reason. It accepted them when it
    // started the installer with the cluster's and host's identities.
    expect(refusals(l)).toEqual([]);
    for (const x of l.hosts) {
      const [run] = l.installerRuns(x.index);
      expect(run).toBeDefined();
      const args = run!.slice(1);
      const flag = (name: string) => args[args.indexOf(name) + 1];
      expect(flag('--cluster-id')).toBe(cluster.id);
      expect(flag('--infra-env-id')).toBe(infraEnv.id);
      expect(hosts.map((hh) => hh.id)).toContain(flag('--host-id'));
      expect(['master', 'worker', 'bootstrap']).toContain(flag('--role'));
      expect(flag('--boot-device')).toMatch(/^\/dev\//);
    }

    // Cancel: each agent stops its installer and gathers and uploads its logs.
    expect((await call('POST', `${api.base}/clusters/${cluster.id}/actions/cancel`)).status).toBe(202);
    await until(l, 'every agent stopping the installer', 300_000, async () => l.hosts.every((x) => l.stopped(x.index).includes('assisted-installer'))).catch(async (err) => {
      throw await diagnose('stop-installation', err);
    });
    const uploaded = (hostId: string) => l.proxy.exchanges.some((x) => x.method === 'POST' && x.url.startsWith(`/api/assisted-install/v2/clusters/${cluster.id}/logs?`) && x.url.includes(`host_id=${hostId}`) && x.status < 300);
    await until(l, 'every host uploading its logs', 300_000, async () => hosts.every((x) => uploaded(x.id))).catch(async (err) => {
      throw await diagnose('logs-gather', err);
    });
    for (const host of hosts) {
      const res = await fetch(`${api.base}/clusters/${cluster.id}/logs?logs_type=host&host_id=${host.id}`);
      expect(res.status).toBe(200);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }

    // Not one agent request was answered with an error, from registration to the log upload.
    expect(l.proxy.exchanges.filter(isAgentPath).length).toBeGreaterThan(0);
    expect(failures(l).map(describeExchange)).toEqual([]);
    expect(refusals(l)).toEqual([]);
  }, 1_200_000);
});
