/**
 * The discovery image's Ignition (spec 3.4): what turns a booted live image
 * into a Landfall host agent that calls home. Pure: the caller supplies the
 * token and URLs. Secrets (the agent token) go into a 0600 file, never into
 * the unit file or the kernel command line, which other users can read.
 */
export interface DiscoveryInput {
  serviceBaseUrl: string;
  infraEnvId: string;
  /** Empty with AUTH_TYPE=none. */
  agentToken: string;
  sshAuthorizedKey?: string;
  proxy?: { http_proxy?: string; https_proxy?: string; no_proxy?: string };
  additionalNtpSources?: string;
  additionalTrustBundle?: string;
  /** A full Ignition config (JSON string) merged over ours; validated by the caller. */
  ignitionConfigOverride?: string;
  /** NetworkManager keyfiles from the static network configuration (see static-network.ts). */
  networkKeyfiles?: Array<{ name: string; contents: string }>;
}

type Json = Record<string, unknown>;

const dataUrl = (text: string) => `data:,${encodeURIComponent(text)}`;

function file(path: string, contents: string, mode: number): Json {
  return { path, mode, overwrite: true, contents: { source: dataUrl(contents) } };
}

const AGENT_UNIT = `[Unit]
Description=Landfall host agent: registers this host and runs the steps the service asks for
Wants=network-online.target
After=network-online.target

[Service]
EnvironmentFile=/etc/landfall/agent.env
ExecStart=/usr/local/bin/landfall-agent
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`;

export function discoveryIgnition(i: DiscoveryInput): Json {
  const env = [
    `LANDFALL_SERVICE_URL=${i.serviceBaseUrl}`,
    `LANDFALL_INFRA_ENV_ID=${i.infraEnvId}`,
    `LANDFALL_AGENT_TOKEN=${i.agentToken}`,
    ...(i.additionalTrustBundle ? ['LANDFALL_CA_BUNDLE=/etc/pki/ca-trust/source/anchors/landfall-additional.pem'] : []),
    ...(i.proxy?.http_proxy ? [`HTTP_PROXY=${i.proxy.http_proxy}`, `http_proxy=${i.proxy.http_proxy}`] : []),
    ...(i.proxy?.https_proxy ? [`HTTPS_PROXY=${i.proxy.https_proxy}`, `https_proxy=${i.proxy.https_proxy}`] : []),
    ...(i.proxy?.no_proxy ? [`NO_PROXY=${i.proxy.no_proxy}`, `no_proxy=${i.proxy.no_proxy}`] : []),
  ].join('\n');
  const files: Json[] = [file('/etc/landfall/agent.env', env + '\n', 0o600)];
  if (i.additionalTrustBundle) files.push(file('/etc/pki/ca-trust/source/anchors/landfall-additional.pem', i.additionalTrustBundle, 0o644));
  // NetworkManager ignores keyfiles readable by others.
  for (const k of i.networkKeyfiles ?? []) files.push(file(`/etc/NetworkManager/system-connections/${k.name}`, k.contents, 0o600));
  const ntp = (i.additionalNtpSources ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (ntp.length) files.push(file('/etc/chrony.d/landfall-ntp.conf', ntp.map((s) => `server ${s} iburst`).join('\n') + '\n', 0o644));

  const config: Json = {
    ignition: { version: '3.4.0' },
    passwd: i.sshAuthorizedKey ? { users: [{ name: 'core', sshAuthorizedKeys: i.sshAuthorizedKey.split('\n').map((k) => k.trim()).filter(Boolean) }] } : {},
    storage: { files },
    systemd: { units: [{ name: 'landfall-agent.service', enabled: true, contents: AGENT_UNIT }] },
  };
  return i.ignitionConfigOverride ? mergeIgnition(config, JSON.parse(i.ignitionConfigOverride) as Json) : config;
}

/**
 * Ignition's own merge rules, simplified: lists of files/units/users are keyed
 * by path/name and the override's entry replaces ours; other objects merge
 * field by field; scalars from the override win.
 */
export function mergeIgnition(base: Json, over: Json): Json {
  const keyOf = (item: Json) => (item.path ?? item.name ?? JSON.stringify(item)) as string;
  const merge = (a: unknown, b: unknown): unknown => {
    if (Array.isArray(a) && Array.isArray(b)) {
      const out = new Map<string, unknown>(a.map((x) => [keyOf(x as Json), x]));
      for (const x of b) out.set(keyOf(x as Json), x);
      return [...out.values()];
    }
    if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
      const out: Json = { ...(a as Json) };
      for (const [k, v] of Object.entries(b as Json)) out[k] = k in out ? merge(out[k], v) : v;
      return out;
    }
    return b;
  };
  const merged = merge(base, over) as Json;
  // The override may not downgrade the spec version we generate for.
  (merged.ignition as Json).version = (base.ignition as Json).version;
  return merged;
}
