/**
 * The install step's argument: assisted-service's InstallCmdRequest, which
 * the upstream agent validates before it runs anything (boot_device,
 * cluster_id, controller_image, host_id, infra_env_id, installer_image and
 * role are required; installer_args is a JSON *string* of coreos-installer
 * arguments). Landfall's own agent reads the same document, plus
 * control_plane_count, which the upstream agent ignores.
 */
export const DEFAULT_INSTALL_IMAGES = {
  installer: 'quay.io/edge-infrastructure/assisted-installer:latest',
  controller: 'quay.io/edge-infrastructure/assisted-installer-controller:latest',
};

export interface InstallRequestInput {
  clusterId: string;
  infraEnvId: string;
  hostId: string;
  role: 'bootstrap' | 'master' | 'worker' | 'arbiter';
  bootDevice: string;
  openshiftVersion: string;
  controlPlaneCount: number;
  images?: { installer: string; controller: string };
  /** Extra coreos-installer arguments (the host's installer_args, an array). */
  installerArgs?: string[];
  /** Day 2: the host joins a running cluster; its installer stops at Rebooting and the controller reports the rest. */
  joinExistingCluster?: boolean;
}

export interface InstallCmdRequest {
  cluster_id: string;
  infra_env_id: string;
  host_id: string;
  role: string;
  boot_device: string;
  installer_image: string;
  controller_image: string;
  installer_args: string;
  openshift_version: string;
  high_availability_mode: 'Full' | 'None';
  check_cvo: boolean;
  control_plane_count: number;
  /** Landfall's own field (the upstream agent ignores it): a day-2 host joining a running cluster. */
  join_existing_cluster?: boolean;
}

export function installCmdRequest(i: InstallRequestInput): InstallCmdRequest {
  const images = i.images ?? DEFAULT_INSTALL_IMAGES;
  return {
    cluster_id: i.clusterId,
    infra_env_id: i.infraEnvId,
    host_id: i.hostId,
    role: i.role,
    boot_device: i.bootDevice,
    installer_image: images.installer,
    controller_image: images.controller,
    installer_args: JSON.stringify(i.installerArgs ?? []),
    openshift_version: i.openshiftVersion,
    high_availability_mode: i.controlPlaneCount === 1 ? 'None' : 'Full',
    check_cvo: false,
    control_plane_count: i.controlPlaneCount,
    ...(i.joinExistingCluster ? { join_existing_cluster: true } : {}),
  };
}
