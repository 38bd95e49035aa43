/**
 * Every event Landfall emits, as data: name, severity, and a message template
 * whose `{placeholders}` must all be supplied. Names follow assisted-service
 * where it has one (`host_registration_succeeded`), so tooling that filters on
 * them keeps working.
 */
export type Severity = 'info' | 'warning' | 'error' | 'critical';

export interface EventSpec {
  severity: Severity;
  category: 'user' | 'metrics';
  template: string;
  description: string;
}

export const EVENT_CATALOGUE = {
  cluster_registration_succeeded: { severity: 'info', category: 'user', template: 'Successfully registered cluster {cluster_name}', description: 'A cluster was created.' },
  cluster_updated: { severity: 'info', category: 'user', template: 'Updated cluster {cluster_name}: {fields}', description: 'A user changed cluster settings.' },
  cluster_deregistered: { severity: 'info', category: 'user', template: 'Deregistered cluster {cluster_name}', description: 'A cluster was deleted.' },
  cluster_prepare_installation_started: { severity: 'info', category: 'user', template: 'Cluster starting to prepare for installation', description: 'Install was requested and accepted.' },
  cluster_installation_canceled: { severity: 'info', category: 'user', template: 'Canceled cluster installation', description: 'A user cancelled the install.' },
  cluster_installation_reset: { severity: 'info', category: 'user', template: 'Reset cluster installation', description: 'A user reset the cluster after a failed or cancelled install.' },
  cluster_status_updated: { severity: 'info', category: 'user', template: 'Updated status of the cluster to {new_status}', description: 'The cluster moved to another status.' },
  cluster_install_config_updated: { severity: 'info', category: 'user', template: 'Custom install config was applied to the cluster', description: 'A user set install-config overrides.' },
  cluster_manifest_created: { severity: 'info', category: 'user', template: 'Created manifest {folder}/{file_name}', description: 'A custom manifest was added.' },
  cluster_manifest_deleted: { severity: 'info', category: 'user', template: 'Deleted manifest {folder}/{file_name}', description: 'A custom manifest was removed.' },
  cluster_logs_uploaded: { severity: 'info', category: 'user', template: 'Uploaded {logs_type} logs for cluster {cluster_name}', description: 'Logs were uploaded for the cluster.' },
  cluster_operator_report: { severity: 'info', category: 'user', template: 'Operator {operator_name} reported status {operator_status}', description: 'A monitored operator reported its state.' },
  cluster_completion_reported: { severity: 'info', category: 'user', template: 'Installer reported completion: success={is_success} {error_info}', description: 'complete-installation was called (informational only).' },
  infra_env_registered: { severity: 'info', category: 'user', template: 'Registered infra env {infra_env_name}', description: 'An infra-env was created.' },
  infra_env_updated: { severity: 'info', category: 'user', template: 'Updated infra env {infra_env_name}', description: 'An infra-env was changed; the next image download carries the change.' },
  infra_env_deregistered: { severity: 'info', category: 'user', template: 'Deregistered infra env {infra_env_name}', description: 'An infra-env was deleted.' },
  host_registration_succeeded: { severity: 'info', category: 'user', template: 'Host {host_name}: Successfully registered', description: 'An agent registered a host.' },
  host_deregistered: { severity: 'info', category: 'user', template: 'Host {host_name}: deregistered', description: 'A host was deleted.' },
  host_updated: { severity: 'info', category: 'user', template: 'Host {host_name}: updated {fields}', description: 'A user changed a host (role, hostname, disk).' },
  host_status_updated: { severity: 'info', category: 'user', template: 'Host {host_name}: updated status from {src_status} to {new_status} ({info})', description: 'A host moved to another status.' },
  host_install_progress_updated: { severity: 'info', category: 'user', template: 'Host {host_name}: reached installation stage {stage}{progress_info}', description: 'A host reported install progress.' },
  host_logs_uploaded: { severity: 'info', category: 'user', template: 'Host {host_name}: uploaded logs', description: 'A host uploaded its logs.' },
  host_logs_requested: { severity: 'info', category: 'user', template: 'Host {host_name}: logs requested because the host is {host_status}', description: 'The service handed a host in error or cancelled the logs-gather step (once per failure or cancel).' },
  host_logs_timed_out: { severity: 'warning', category: 'user', template: 'Host {host_name}: log collection timed out ({logs_state} for more than {seconds} s)', description: 'Logs were requested but did not arrive in time (HOST_LOGS_PENDING_TIMEOUT_MS, HOST_LOGS_COLLECTION_TIMEOUT_MS).' },
  controller_logs_uploaded: { severity: 'info', category: 'user', template: 'Uploaded controller logs for cluster {cluster_name}', description: 'The in-cluster controller uploaded its logs (when finalizing completes, or when the install failed).' },
  host_validation_failed: { severity: 'warning', category: 'user', template: "Host {host_name}: validation '{validation_id}' that used to succeed is now failing: {message}", description: 'A host validation started failing; the host shows the remediation.' },
  host_validation_fixed: { severity: 'info', category: 'user', template: "Host {host_name}: validation '{validation_id}' is now fixed", description: 'A failing host validation passes again.' },
  cluster_validation_failed: { severity: 'warning', category: 'user', template: "Cluster validation '{validation_id}' that used to succeed is now failing: {message}", description: 'A cluster validation started failing.' },
  cluster_validation_fixed: { severity: 'info', category: 'user', template: "Cluster validation '{validation_id}' is now fixed", description: 'A failing cluster validation passes again.' },
  cluster_installation_started: { severity: 'info', category: 'user', template: 'Installation of cluster {cluster_name} started (attempt {attempt}, bootstrap host {bootstrap_host})', description: 'Every host passed the pre-install checks; install steps were dispatched.' },
  cluster_install_resumed: { severity: 'warning', category: 'user', template: 'Cluster install resumed: {reason}', description: 'The install was requested but its workflow never started (the API process stopped in between); the host monitor started it.' },
  cluster_preparation_failed: { severity: 'error', category: 'user', template: 'Cluster failed to prepare for installation: {reason}', description: 'A pre-install check failed or preparing timed out; the cluster is ready again.' },
  cluster_installation_failed: { severity: 'critical', category: 'user', template: 'Cluster installation failed: {reason}', description: 'The install cannot succeed any more; retry the failed host or reset.' },
  cluster_finalizing_started: { severity: 'info', category: 'user', template: 'Cluster {cluster_name}: enough hosts are installed, finalizing', description: 'The success rule is met.' },
  cluster_installation_completed: { severity: 'info', category: 'user', template: 'Successfully completed installing cluster {cluster_name}', description: 'The cluster is installed; the kubeconfig can be downloaded.' },
  host_stage_timed_out: { severity: 'warning', category: 'user', template: 'Host {host_name}: installation stage {stage} has been running for {duration} ({kind} timeout){consequence}', description: 'A stage ran past its soft (warning) or hard (failure) timeout.' },
  host_install_retried: { severity: 'info', category: 'user', template: 'Host {host_name}: installation retried (retry {retry})', description: 'A failed host was retried in place.' },
  host_step_failed: { severity: 'warning', category: 'user', template: 'Host {host_name}: step {step_type} failed with exit code {exit_code}: {error}', description: 'An agent step exited non-zero.' },
  cluster_imported: { severity: 'info', category: 'user', template: 'Imported cluster {cluster_name} (API {api_vip_dnsname}) to add hosts to it', description: 'Day 2: an existing cluster was brought under management (POST /v2/clusters/import).' },
  cluster_add_hosts_allowed: { severity: 'info', category: 'user', template: 'Cluster {cluster_name} accepts new hosts (day 2)', description: 'Day 2: an installed cluster was opened for new hosts (POST actions/allow-add-workers).' },
  host_day2_install_started: { severity: 'info', category: 'user', template: 'Host {host_name}: installation into the running cluster {cluster_name} started (attempt {attempt})', description: 'Day 2: a known host was installed into its installed cluster; its own workflow follows it.' },
  host_join_credential_minted: { severity: 'info', category: 'user', template: 'Host {host_name}: join credential {token_id} minted from the cluster CA, valid until {expires_at}', description: 'Day 2: a short-lived credential for this host alone was put into its Ignition (never the credential itself in an event).' },
  host_joined_cluster: { severity: 'info', category: 'user', template: "Host {host_name}: the cluster's controller reported the node {stage}", description: 'Day 2: the controller reported the new node joined (Joined) and ready (Done).' },
  host_day2_install_resumed: { severity: 'warning', category: 'user', template: 'Host {host_name}: installation resumed: {reason}', description: 'Day 2: the host was set installing but its workflow never started (the API process stopped in between); the host monitor started it.' },
  host_day2_install_failed: { severity: 'error', category: 'user', template: 'Host {host_name}: installation failed: {reason}', description: 'Day 2: the host\'s install workflow is gone or ended without finishing it; retry the host (a new attempt) or reset it.' },
  host_day2_install_reset: { severity: 'info', category: 'user', template: 'Host {host_name}: installation reset; boot it from the discovery image to install it again', description: 'Day 2: a user reset one host (POST …/hosts/{id}/actions/reset).' },
  bmc_host_enrolled: { severity: 'info', category: 'user', template: 'BMC {bmc_address}{simulated}: enrolled; powering the machine on from the discovery ISO', description: 'A machine was enrolled by its BMC (POST /v2/infra-envs/{id}/bmc-hosts).' },
  bmc_status_updated: { severity: 'info', category: 'user', template: 'BMC {bmc_address}{simulated}: updated status from {src_status} to {new_status} ({info})', description: 'An enrolled BMC moved to another status (src/domain/lifecycle/bmc-state-machine.ts).' },
  bmc_action_succeeded: { severity: 'info', category: 'user', template: 'BMC {bmc_address}{simulated}: {action} done ({detail})', description: 'Landfall drove a BMC: power, virtual media, boot device.' },
  bmc_action_failed: { severity: 'error', category: 'user', template: 'BMC {bmc_address}{simulated}: {action} failed: {reason}', description: 'A BMC refused a call or could not be reached; the reason names the call and the answer.' },
  host_bmc_set: { severity: 'info', category: 'user', template: 'Host {host_name}: BMC set to {bmc_address}{simulated}', description: 'A user gave a registered host its BMC (PUT …/hosts/{id}/bmc), or an enrolled BMC was matched to the host that registered.' },
  host_bmc_removed: { severity: 'info', category: 'user', template: 'Host {host_name}: BMC {bmc_address} removed', description: 'A user removed a host\'s BMC; the install no longer boots it from disk by itself.' },
} as const satisfies Record<string, EventSpec>;

export type EventName = keyof typeof EVENT_CATALOGUE;

/** Renders a template; a missing property is a programming error, not a blank in a message. */
export function renderEvent(name: EventName, props: Record<string, string | number | boolean | undefined>): string {
  return EVENT_CATALOGUE[name].template.replace(/\{(\w+)\}/g, (_m, key: string) => {
    const v = props[key];
    if (v === undefined) throw new Error(`event ${name} needs property ${key}`);
    return String(v);
  });
}
