/**
 * Agent configuration: a JSON file (optional) overridden by the environment
 * the discovery Ignition sets (/etc/landfall/agent.env via EnvironmentFile).
 * This module is the only place in agent/ that reads process.env.
 */
import { readFileSync } from 'node:fs';

export interface AgentConfig {
  serviceUrl: string;
  infraEnvId: string;
  agentToken: string;
  caBundleFile?: string;
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
  /** Overrides the service's next_instruction_seconds (tests, demos). */
  pollIntervalSeconds?: number;
  statusFile?: string;
  /** Where undelivered reports are kept across restarts (LANDFALL_OUTBOX_DIR); none: memory only. */
  outboxDir?: string;
  agentVersion: string;
}

export const AGENT_VERSION = 'landfall-agent/0.1.0';

export class AgentConfigError extends Error {}

export function loadAgentConfig(opts: { file?: string; env?: Record<string, string | undefined> } = {}): AgentConfig {
  const env = opts.env ?? process.env;
  const fromFile: Partial<AgentConfig> = opts.file ? (JSON.parse(readFileSync(opts.file, 'utf8')) as Partial<AgentConfig>) : {};
  const pick = (envName: string, fileValue: string | undefined) => env[envName] || fileValue || undefined;
  const poll = pick('LANDFALL_POLL_INTERVAL_SECONDS', fromFile.pollIntervalSeconds?.toString());
  const cfg: AgentConfig = {
    serviceUrl: (pick('LANDFALL_SERVICE_URL', fromFile.serviceUrl) ?? '').replace(/\/+$/, ''),
    infraEnvId: pick('LANDFALL_INFRA_ENV_ID', fromFile.infraEnvId) ?? '',
    agentToken: pick('LANDFALL_AGENT_TOKEN', fromFile.agentToken) ?? '',
    caBundleFile: pick('LANDFALL_CA_BUNDLE', fromFile.caBundleFile),
    httpProxy: pick('HTTP_PROXY', fromFile.httpProxy) ?? env.http_proxy,
    httpsProxy: pick('HTTPS_PROXY', fromFile.httpsProxy) ?? env.https_proxy,
    noProxy: pick('NO_PROXY', fromFile.noProxy) ?? env.no_proxy,
    pollIntervalSeconds: poll !== undefined ? Number(poll) : undefined,
    statusFile: pick('LANDFALL_STATUS_FILE', fromFile.statusFile) ?? '/run/landfall-agent/status.json',
    // On disk, so reports survive an agent restart mid-install (/var/lib, not /run: a restart of the agent, not of the host).
    outboxDir: pick('LANDFALL_OUTBOX_DIR', fromFile.outboxDir) ?? '/var/lib/landfall-agent',
    agentVersion: AGENT_VERSION,
  };
  if (!/^https?:\/\//.test(cfg.serviceUrl)) throw new AgentConfigError('LANDFALL_SERVICE_URL must be an http(s) URL of the Landfall service');
  if (!/^[0-9a-f-]{36}$/i.test(cfg.infraEnvId)) throw new AgentConfigError('LANDFALL_INFRA_ENV_ID must be the infra-env UUID');
  if (cfg.pollIntervalSeconds !== undefined && !(cfg.pollIntervalSeconds > 0)) throw new AgentConfigError('LANDFALL_POLL_INTERVAL_SECONDS must be a positive number');
  return cfg;
}
