/** Renders docs/validations.md from the validation tables, including what was left out and why. */
import { HOST_VALIDATIONS } from './host-validations';
import { CLUSTER_VALIDATIONS } from './cluster-validations';
import { DEFAULT_REQUIREMENTS } from './requirements';

/** assisted-service validations Landfall does not implement, and why (reference §5). */
export const LEFT_OUT: ReadonlyArray<[string, string]> = [
  ['media-connected', 'Virtual-media disconnects are reported by the AS agent through exit code 256; Landfall hosts boot the discovery image and are tracked by polling (connected).'],
  ['inventory-not-fully-truncated / inventory-not-partially-truncated', 'The Landfall agent never truncates its inventory.'],
  ['compatible-with-cluster-platform, valid-platform-network-settings, vsphere-disk-uuid-enabled', 'Tied to OpenShift platform providers (vSphere, Nutanix, OpenStack); Landfall installs bare metal.'],
  ['disk-encryption-requirements-satisfied', 'Tang/TPM disk encryption is not part of the day-1 scope yet.'],
  ['api-domain-name-resolved-correctly, api-int-domain-name-resolved-correctly, apps-domain-name-resolved-correctly', 'Only apply to user-managed networking (multi-node) and day 2; the domain-resolution step already reports the answers on the host.'],
  ['dns-wildcard-not-configured, release-domain-name-resolved-correctly', 'The wildcard probe is sent (domain-resolution) but not yet judged; the release check is off in AS too.'],
  ['mtu-valid', 'Needs MTU probes with do-not-fragment pings, which the agent does not send yet.'],
  ['compatible-agent, no-skip-installation-disk, no-skip-missing-disk, no-ip-collisions-in-network, no-iscsi-nic-belongs-to-machine-cidr, ignition-downloadable', 'Upgrade-agent, disk-skip, iSCSI and day-2 features are not in scope.'],
  ['<operator>-requirements-satisfied (host and cluster)', 'OpenShift operators (ODF, CNV, LSO …) do not exist in a kubeadm cluster.'],
  ['network-type-valid, custom-manifests-…, platform-…, openshift-ai-gpu-…', 'OpenShift network types and platforms; Landfall installs one CNI.'],
];

export function validationsDoc(): string {
  const row = (v: { id: string; category: string; description: string }) => `| \`${v.id}\` | ${v.category} | ${v.description} |`;
  const req = Object.entries(DEFAULT_REQUIREMENTS).map(([role, r]) => `| ${role} | ${r.cpuCores} | ${r.ramMib} | ${r.diskGb} | ${r.diskSyncSoftMs} / ${r.diskSyncHardMs} | ${r.rttSoftMs} / ${r.rttHardMs} | ${r.lossSoftPercent} / ${r.lossHardPercent} |`);
  return [
    '# Validations',
    '',
    '<!-- Generated from the validation tables by src/domain/lifecycle/validations-docs.ts; do not edit. Regenerate with: UPDATE_DOCS=1 npx jest test/unit/state-machines.test.ts -->',
    '',
    "Every validation has the id assisted-service uses (`validations_info` keeps AS's JSON shape). A failing one also carries, in `validation_remediation`, a machine-readable `cause`, the `peers` involved and a `hint` that says what to do, and whether it blocks install (soft thresholds warn, hard ones block).",
    '',
    '## Requirements by role (HOST_REQUIREMENTS_FILE overrides)',
    '',
    '| role | CPU cores | RAM MiB | disk GB | disk fdatasync ms soft / hard | RTT ms soft / hard | loss % soft / hard |',
    '|---|---|---|---|---|---|---|',
    ...req,
    '',
    '## Host validations',
    '',
    '| id | category | passes when |',
    '|---|---|---|',
    ...HOST_VALIDATIONS.map(row),
    '',
    '## Cluster validations',
    '',
    '| id | category | passes when |',
    '|---|---|---|',
    ...CLUSTER_VALIDATIONS.map(row),
    '',
    '## Left out, and why',
    '',
    '| assisted-service validation | why Landfall has none |',
    '|---|---|',
    ...LEFT_OUT.map(([id, why]) => `| ${id} | ${why} |`),
    '',
  ].join('\n');
}
