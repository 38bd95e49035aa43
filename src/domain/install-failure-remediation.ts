/**
 * What a person at the console should do when a host fails in a given install
 * stage, as data. Keyed by the stage the host was in, with one text for a
 * stage that ran past its hard timeout (nothing was reported: look at the
 * host) and one for an error the installer reported (read what it said). The
 * install report picks the entry; the CLI and the UI only print it.
 */
import type { HostStage } from './install-stages';

export type FailureKind = 'timeout' | 'error';

interface StageRemedy {
  /** The installer reported the failure (stage Failed, a failing install step). */
  error: string;
  /** The stage exceeded its hard timeout without the host reporting progress. */
  timeout: string;
}

const CONSOLE = 'Open the host console (BMC or screen) and';
const LOGS = 'Download the host logs (landfall logs --cluster <cluster> --type host --host <host id>, or GET …/clusters/<id>/logs?logs_type=host&host_id=<host id>) and';
/** Retrying one host is an API action today (the CLI has no command for it yet). */
const RETRY = 'retry the host (POST …/infra-envs/<infra-env>/hosts/<host>/actions/retry-install)';

export const STAGE_REMEDIATION: Partial<Record<HostStage | 'preparing' | 'finalizing', StageRemedy>> = {
  preparing: {
    error: 'A pre-install check failed (usually the install disk is too slow for etcd: fsync above 10 ms). Use a faster disk (SSD/NVMe) or another disk (PATCH the host installation_disk_id), then install again.',
    timeout: 'Not every host finished its pre-install checks in time. Check that all hosts are still connected (landfall hosts --cluster <cluster>) and that none is stuck running the disk speed check, then install again.',
  },
  'Starting installation': {
    error: `${LOGS} read agent.journal.log: the installer could not start (often it could not fetch its Ignition from the service). Check the host reaches the service URL, then ${RETRY}.`,
    timeout: `The host never started installing after the install step was handed out. ${CONSOLE} check the agent is running (systemctl status landfall-agent) and can reach the service; then retry the host.`,
  },
  Installing: {
    error: `${LOGS} read installer.journal.log and agent.journal.log. Common causes: the pull secret is rejected by the registry, or the release image cannot be pulled (proxy, DNS, firewall). Fix access, then retry the host.`,
    timeout: `${CONSOLE} check image pulls are progressing (journalctl -u landfall-agent); a slow or blocked registry (proxy, firewall) is the usual cause. Then retry the host.`,
  },
  'Writing image to disk': {
    error: `coreos-installer failed writing the install disk. ${LOGS} read the coreos-installer error in installer.journal.log. Check the disk is healthy and not write-protected (lsblk, dmesg for I/O errors), wipe leftover partitions or RAID metadata (wipefs -a <disk>), or choose another install disk; then retry the host.`,
    timeout: `Writing the image is taking far too long: the disk or the image download is very slow. ${CONSOLE} check disk health (dmesg for I/O errors) and network throughput to the registry; use a faster disk if needed, then retry the host.`,
  },
  'Copying registry data to disk': {
    error: `Copying the mirrored registry data failed. ${LOGS} check free space on the install disk and the mirror's reachability; then retry the host.`,
    timeout: 'Copying registry data is very slow: check the disk speed and free space, then retry the host.',
  },
  'Waiting for control plane': {
    error: `The control plane did not come up. ${LOGS} check the control-plane hosts reach each other on ports 6443, 2379-2380 and 22623, and that the API VIP answers (curl -k https://<api-vip>:6443/readyz). Then reset the cluster and install again.`,
    timeout: 'The other control-plane hosts did not join in time. Check every control-plane host is installing (landfall hosts --cluster <cluster>), that they reach each other and the API VIP, and that no host is stuck in an earlier stage.',
  },
  'Waiting for bootkube': {
    error: `Bootstrapping the control plane (bootkube) failed on the bootstrap host. ${LOGS} read boot.journal.log for bootkube; typical causes are an unreachable release image or wrong machine network / VIPs. Fix, then reset and install again.`,
    timeout: `bootkube did not finish in time on the bootstrap host. ${CONSOLE} check etcd and kube-apiserver pods (crictl ps -a) and the API VIP; slow install disks make etcd miss its deadlines.`,
  },
  'Waiting for controller': {
    error: `The in-cluster controller did not start. ${LOGS} check the cluster's pods can be scheduled (enough control-plane hosts Ready) and that images can be pulled.`,
    timeout: 'The in-cluster controller did not report in time. Check the cluster API is reachable and the controller pod is running (kubectl -n assisted-installer get pods).',
  },
  Rebooting: {
    error: `The host failed to reboot into the installed system. ${CONSOLE} check the boot order: the install disk must boot before the discovery image (remove the ISO or change the order), then the host continues on its own.`,
    timeout: `The host did not come back after rebooting. ${CONSOLE} check it boots from the install disk (not the discovery image, not PXE) and that the firmware finds a bootable disk; fix the boot order and the install continues.`,
  },
  'Waiting for ignition': {
    error: `The worker could not fetch its Ignition from the cluster. ${CONSOLE} check it reaches the API VIP on port 22623 (curl -k https://<api-vip>:22623/config/worker).`,
    timeout: 'The worker is waiting for the machine config server. Check the control plane is up and the API VIP answers on port 22623 from this host; then retry the host.',
  },
  Configuring: {
    error: `The host failed while applying its configuration. ${LOGS} read boot.journal.log; a bad custom manifest or a network change that cut the host off is a common cause. Fix, then retry the host.`,
    timeout: `The host did not finish configuring. ${CONSOLE} check it reaches the API VIP and that its kubelet runs (systemctl status kubelet); pending certificate signing requests can also hold it (kubectl get csr).`,
  },
  Joined: {
    error: 'The host joined but did not become Ready. Check its node conditions (kubectl describe node <name>) and the CNI pods on it.',
    timeout: 'The node joined but is not Ready. Check kubectl describe node <name>, the CNI pods on it and pending certificate signing requests (kubectl get csr).',
  },
  finalizing: {
    error: 'The cluster did not finish installing its core components. Check the cluster operators (kubectl get clusteroperators, or the controller logs: landfall logs --cluster <cluster> --type controller), then reset and install again.',
    timeout: 'The core components did not become available in time. Download the controller logs and check which component is not available (kubectl get clusteroperators); then reset and install again.',
  },
};

const GENERIC: StageRemedy = {
  error: `${LOGS} read installer.journal.log and agent.journal.log for the error; fix the cause, then ${RETRY} or reset the cluster.`,
  timeout: `The host stopped reporting progress. ${CONSOLE} check it is powered on, reachable and running the agent; then retry the host or reset the cluster.`,
};

/**
 * Causes that say more than the stage they happened in, whatever the stage:
 * matched against what the host reported, first match wins.
 */
export const CAUSE_REMEDIATION: ReadonlyArray<{ id: string; match: RegExp; advice: string }> = [
  { id: 'host-restarted', match: /unexpectedly restarted/i, advice: `The host rebooted in the middle of the install (power loss, watchdog, kernel panic, or someone rebooted it) and came back into the discovery image. Check the BMC event log and the console for a panic; once it is stable, ${RETRY} or reset the cluster.` },
  { id: 'pull-secret', match: /unauthori[sz]ed|authentication required|pull secret|denied: /i, advice: `The registry refused the pull secret. Update the cluster's pull_secret (PATCH /v2/clusters/<id>) with a valid one for the release registry, then ${RETRY}.` },
  { id: 'disk-full', match: /no space left on device/i, advice: `The install disk is full or too small for the image. Choose a larger install disk (PATCH the host's disks_selected_config) or free it, then ${RETRY}.` },
  { id: 'disk-read-only', match: /read-only|write-protected|EROFS/i, advice: `The install disk cannot be written (read-only or write-protected). Check the disk's write-protect setting and RAID controller, or choose another install disk; then ${RETRY}.` },
  { id: 'io-error', match: /I\/O error|EIO\b/i, advice: `The install disk reported I/O errors: it is probably failing. Check dmesg.log in the host logs and the disk's SMART status (smartctl -a <disk>), replace or choose another disk, then ${RETRY}.` },
];

/** The advice for a failure at `stage`: a known cause first, then the stage's entry; unknown stages get the generic advice. */
export function remediationFor(stage: string | undefined, kind: FailureKind, cause?: string): string {
  const known = cause ? CAUSE_REMEDIATION.find((c) => c.match.test(cause)) : undefined;
  if (known && kind === 'error') return known.advice;
  const entry = (stage && STAGE_REMEDIATION[stage as keyof typeof STAGE_REMEDIATION]) || GENERIC;
  return entry[kind];
}
