"""Drives Landfall through the generated assisted-service Python client only.

Usage: test_assisted_client.py [BASE_URL]   (or LANDFALL_ASSISTED_URL), e.g.
http://127.0.0.1:8090/api/assisted-install. Expects AUTH_TYPE=none.

Every call goes through assisted_service_client (Configuration, ApiClient,
InstallerApi, EventsApi, VersionsApi, models), so whatever the client rejects
when reading a response (a required field missing or null, an inline enum value
outside its list, a date-time dateutil cannot parse) fails the run. Responses
the client returns as raw lists (HostList, ClusterList, EventList) are also fed
through the client's own deserializer, element by element, so their items meet
the same rules as a single object would.

Checks run in order and depend on each other; the first failure stops the run
with its traceback. One line per check, then `compat: N passed, M failed`.
Exit code 0 when every check passed, 1 otherwise.
"""

import json
import os
import sys
import uuid

import assisted_service_client as asc
from assisted_service_client.rest import ApiException

PULL_SECRET_AUTH = "c2VjcmV0LXB1bGwtc2VjcmV0LXZhbHVl"
PULL_SECRET = json.dumps({"auths": {"registry.example.com": {"auth": PULL_SECRET_AUTH}}})
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m test@landfall"
INSTALL_DISK = "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"


class RecordingApiClient(asc.ApiClient):
    """The generated ApiClient, keeping every response body it received so the
    run can check afterwards that the pull secret never left the service."""

    def __init__(self, configuration):
        super().__init__(configuration)
        self.bodies = []

    def request(self, *args, **kwargs):
        try:
            resp = super().request(*args, **kwargs)
        except ApiException as e:
            self.bodies.append(e.body if isinstance(e.body, (str, bytes)) else "")
            raise
        # With _preload_content=False this is the urllib3 response; .data
        # caches the body, so the caller can still read it.
        self.bodies.append(resp.data)
        return resp


class _Body:
    def __init__(self, data):
        self.data = json.dumps(data)


def strict(client, items, model):
    """Deserializes each element of a raw list through the client, as a `model`."""
    assert isinstance(items, list), f"expected a list, got {type(items).__name__}"
    return [client.deserialize(_Body(item), model) for item in items]


def inventory(hostname, ip, mac):
    return json.dumps(
        {
            "hostname": hostname,
            "bmc_address": "0.0.0.0",
            "bmc_v6address": "::/0",
            "boot": {"current_boot_mode": "uefi"},
            "cpu": {"count": 8, "architecture": "x86_64", "model_name": "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", "frequency": 2100, "flags": ["vmx", "avx2"]},
            "memory": {"physical_bytes": 34359738368, "usable_bytes": 33285996544},
            "disks": [
                {
                    "id": INSTALL_DISK,
                    "by_id": INSTALL_DISK,
                    "path": "/dev/sda",
                    "name": "sda",
                    "drive_type": "SSD",
                    "size_bytes": 240057409536,
                    "model": "SAMSUNG MZ7LH240",
                    "serial": "S455NY0M123456",
                    "vendor": "ATA",
                    "bootable": False,
                    "smart": "",
                    "installation_eligibility": {"eligible": True, "not_eligible_reasons": []},
                },
                {
                    "id": "/dev/sr0",
                    "path": "/dev/sr0",
                    "name": "sr0",
                    "drive_type": "ODD",
                    "size_bytes": 1073741824,
                    "removable": True,
                    "installation_eligibility": {"eligible": False, "not_eligible_reasons": ["Disk is removable"]},
                },
            ],
            "interfaces": [
                {
                    "name": "eth0",
                    "mac_address": mac,
                    "ipv4_addresses": [f"{ip}/24"],
                    "ipv6_addresses": [],
                    "mtu": 1500,
                    "has_carrier": True,
                    "speed_mbps": 1000,
                    "type": "physical",
                    "flags": ["up", "broadcast", "multicast"],
                    "vendor": "0x1af4",
                    "product": "0x0001",
                }
            ],
            "routes": [
                {"interface": "eth0", "destination": "0.0.0.0", "gateway": "192.168.10.1", "family": 2, "metric": 100},
                {"interface": "eth0", "destination": "192.168.10.0", "gateway": "0.0.0.0", "family": 2, "metric": 100},
            ],
            "system_vendor": {"manufacturer": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)", "serial_number": "", "virtual": True},
            "timestamp": 1760000000,
        }
    )


def main():
    base = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LANDFALL_ASSISTED_URL", "")).rstrip("/")
    if not base:
        print("usage: test_assisted_client.py BASE_URL (e.g. http://127.0.0.1:8090/api/assisted-install)", file=sys.stderr)
        return 2

    config = asc.Configuration()
    config.host = base
    client = RecordingApiClient(config)
    installer = asc.InstallerApi(client)
    events_api = asc.EventsApi(client)
    versions = asc.VersionsApi(client)

    passed = 0
    completed = False

    def ok(name):
        nonlocal passed
        passed += 1
        print(f"ok {passed} - {name}", flush=True)

    try:
        # ---- releases
        v = versions.v2_list_supported_openshift_versions()
        assert isinstance(v, dict) and "1.31" in v, f"openshift versions: {v!r}"
        for item in v.values():
            client.deserialize(_Body(item), "OpenshiftVersion")
        ok("v2_list_supported_openshift_versions lists 1.31 (each entry parses as OpenshiftVersion)")

        only = versions.v2_list_supported_openshift_versions(version="1.31", only_latest=True)
        assert list(only) == ["1.31"], only
        ok("v2_list_supported_openshift_versions(version=1.31, only_latest=True) keeps 1.31 only")

        # ---- cluster
        cluster = installer.v2_register_cluster(
            asc.ClusterCreateParams(
                name="compat-1",
                openshift_version="1.31",
                pull_secret=PULL_SECRET,
                base_dns_domain="example.com",
                ssh_public_key=SSH_KEY,
            )
        )
        assert isinstance(cluster, asc.Cluster)
        assert cluster.kind == "Cluster" and cluster.name == "compat-1", cluster
        assert cluster.href == f"/api/assisted-install/v2/clusters/{cluster.id}", cluster.href
        assert cluster.pull_secret_set is True, cluster.pull_secret_set
        assert cluster.status in ("insufficient", "pending-for-input"), cluster.status
        cluster_id = cluster.id
        ok(f"v2_register_cluster creates {cluster_id} ({cluster.status})")

        got = installer.v2_get_cluster(cluster_id)
        assert got.id == cluster_id and got.base_dns_domain == "example.com" and got.ssh_public_key == SSH_KEY, got
        assert got.created_at is not None and got.updated_at is not None
        ok("v2_get_cluster returns the cluster")

        # Header booleans go out as "True"/"False" (str(bool)), like query booleans.
        lean = installer.v2_get_cluster(cluster_id, get_unregistered_clusters=True, exclude_hosts=True, discovery_agent_version="landfall-agent:compat")
        assert lean.id == cluster_id and not lean.hosts, lean.hosts
        ok("v2_get_cluster(get_unregistered_clusters=True, exclude_hosts=True) is accepted")

        listed = installer.v2_list_clusters(with_hosts=True)
        clusters = strict(client, listed, "Cluster")
        assert cluster_id in [c.id for c in clusters], [c.id for c in clusters]
        ok("v2_list_clusters(with_hosts=True) lists it (each item parses as Cluster)")

        patched = installer.v2_update_cluster(
            cluster_id,
            asc.V2ClusterUpdateParams(
                machine_networks=[asc.MachineNetwork(cidr="192.168.10.0/24")],
                api_vips=[asc.ApiVip(ip="192.168.10.5")],
                ingress_vips=[asc.IngressVip(ip="192.168.10.6")],
            ),
        )
        assert isinstance(patched, asc.Cluster)
        assert [n.cidr for n in patched.machine_networks] == ["192.168.10.0/24"], patched.machine_networks
        assert [x.ip for x in patched.api_vips] == ["192.168.10.5"], patched.api_vips
        assert [x.ip for x in patched.ingress_vips] == ["192.168.10.6"], patched.ingress_vips
        assert patched.schedulable_masters is False, patched.schedulable_masters
        ok("v2_update_cluster sets machine network and VIPs")

        # ---- infra-env
        ie = installer.register_infra_env(
            asc.InfraEnvCreateParams(
                name="compat-1-ie",
                pull_secret=PULL_SECRET,
                cluster_id=cluster_id,
                ssh_authorized_key=SSH_KEY,
                image_type="minimal-iso",
                kernel_arguments=[asc.KernelArgument(operation="append", value="rd.net.timeout.carrier=60")],
            )
        )
        assert isinstance(ie, asc.InfraEnv)
        assert ie.kind == "InfraEnv" and ie.cluster_id == cluster_id and ie.type == "minimal-iso", ie
        assert ie.pull_secret_set is True
        # A JSON string on the wire (the model types it str), not the array sent.
        assert isinstance(ie.kernel_arguments, str), repr(ie.kernel_arguments)
        assert json.loads(ie.kernel_arguments) == [{"operation": "append", "value": "rd.net.timeout.carrier=60"}], ie.kernel_arguments
        infra_env_id = ie.id
        ok(f"register_infra_env creates {infra_env_id} bound to the cluster")

        got_ie = installer.get_infra_env(infra_env_id)
        assert got_ie.id == infra_env_id and got_ie.name == "compat-1-ie", got_ie
        ies = strict(client, installer.list_infra_envs(cluster_id=cluster_id), "InfraEnv")
        assert [x.id for x in ies] == [infra_env_id], [x.id for x in ies]
        ok("get_infra_env and list_infra_envs(cluster_id) return it")

        url = installer.get_infra_env_download_url(infra_env_id)
        assert isinstance(url, asc.PresignedUrl)
        assert url.url and infra_env_id in url.url, url.url
        assert url.expires_at is not None and url.expires_at.tzinfo is not None, url.expires_at
        ok(f"get_infra_env_download_url gives a presigned URL expiring {url.expires_at.isoformat()}")

        ign = installer.v2_download_infra_env_files(infra_env_id, "discovery.ign", _preload_content=False)
        assert ign.status == 200, ign.status
        ignition = json.loads(ign.data)
        assert ignition["ignition"]["version"].startswith("3."), ignition.get("ignition")
        ok("v2_download_infra_env_files(discovery.ign, _preload_content=False) is an Ignition config")

        # ---- agents
        host_ids = [str(uuid.uuid4()) for _ in range(3)]
        for hid in host_ids:
            reg = installer.v2_register_host(infra_env_id, asc.HostCreateParams(host_id=hid, discovery_agent_version="landfall-agent:compat"))
            assert isinstance(reg, asc.HostRegistrationResponse)
            cmd = reg.next_step_runner_command
            assert cmd is not None and isinstance(cmd.args, list) and cmd.args, cmd
            args = json.loads(cmd.args[0])
            assert args == {"infra_env_id": infra_env_id, "host_id": hid, "agent_version": "landfall-agent:compat"}, args
        ok("v2_register_host registers 3 hosts with a next_step_runner_command")

        steps = installer.v2_get_next_steps(infra_env_id, host_ids[0], timestamp=1760000000)
        assert isinstance(steps, asc.Steps)
        assert steps.post_step_action == "continue" and steps.next_instruction_seconds > 0, steps
        inv_steps = [s for s in steps.instructions or [] if s.step_type == "inventory"]
        assert inv_steps and inv_steps[0].step_id, steps.instructions
        ok(f"v2_get_next_steps hands out an inventory step ({inv_steps[0].step_id})")

        names = ["master-0", "master-1", "master-2"]
        macs = ["52:54:00:aa:00:01", "52:54:00:aa:00:02", "52:54:00:aa:00:03"]
        for i, hid in enumerate(host_ids):
            step_id = inv_steps[0].step_id if i == 0 else f"inventory-compat{i}"
            installer.v2_post_step_reply(
                infra_env_id,
                hid,
                reply=asc.StepReply(step_type="inventory", step_id=step_id, exit_code=0, output=inventory(names[i], f"192.168.10.{20 + i}", macs[i])),
            )
        ok("v2_post_step_reply accepts 3 inventory replies")

        by_ie = strict(client, installer.v2_list_hosts(infra_env_id), "Host")
        assert sorted(h.id for h in by_ie) == sorted(host_ids), [h.id for h in by_ie]
        by_cluster = strict(client, installer.list_cluster_hosts(cluster_id), "Host")
        assert sorted(h.id for h in by_cluster) == sorted(host_ids), [h.id for h in by_cluster]
        assert all(h.cluster_id == cluster_id for h in by_cluster)
        ok("v2_list_hosts and list_cluster_hosts list the 3 hosts (each item parses as Host)")

        with_hosts = installer.v2_get_cluster(cluster_id)
        assert sorted(h.id for h in with_hosts.hosts) == sorted(host_ids), with_hosts.hosts
        ok("v2_get_cluster includes the 3 hosts (each parsed as Host)")

        host = installer.v2_get_host(infra_env_id, host_ids[0])
        assert isinstance(host, asc.Host) and host.id == host_ids[0], host
        assert isinstance(host.inventory, str), type(host.inventory)
        assert json.loads(host.inventory)["hostname"] == "master-0", host.inventory[:200]
        assert host.checked_in_at is not None, "checked_in_at"
        ok("v2_get_host returns inventory as a JSON string with the hostname sent")

        updated = installer.v2_update_host(
            infra_env_id,
            host_ids[0],
            asc.HostUpdateParams(host_role="master", host_name="cp-0", disks_selected_config=[asc.DiskConfigParams(id=INSTALL_DISK, role="install")]),
        )
        assert isinstance(updated, asc.Host)
        assert updated.role == "master" and updated.requested_hostname == "cp-0", (updated.role, updated.requested_hostname)
        assert updated.installation_disk_id == INSTALL_DISK, updated.installation_disk_id
        ok("v2_update_host sets role, hostname and installation disk")

        # ---- events
        evs, status, headers = events_api.v2_list_events_with_http_info(cluster_id=cluster_id)
        assert status == 200, status
        parsed = strict(client, evs, "Event")
        assert parsed, "no events"
        count = int(headers["Event-Count"])
        info = int(headers["Severity-Count-Info"])
        assert count == len(parsed), (count, len(parsed))
        assert info == sum(1 for e in parsed if e.severity == "info"), (info, [e.severity for e in parsed])
        names_seen = {e.name for e in parsed}
        assert "cluster_registration_succeeded" in names_seen, names_seen
        ok(f"v2_list_events: {count} events, Event-Count and Severity-Count-Info agree (each item parses as Event)")

        page, _, page_headers = events_api.v2_list_events_with_http_info(cluster_id=cluster_id, limit=2, offset=1, severities=["info"])
        assert len(page) == min(2, max(info - 1, 0)) and int(page_headers["Event-Count"]) == info, (len(page), page_headers.get("Event-Count"))
        ok("v2_list_events pages with limit/offset and filters severities")

        mine = strict(client, events_api.v2_list_events(cluster_id=cluster_id, host_id=host_ids[0]), "Event")
        assert mine and all(e.host_id == host_ids[0] for e in mine), [(e.name, e.host_id) for e in mine]
        ok(f"v2_list_events(host_id=...) returns only that host's {len(mine)} events")

        # ---- install refused
        try:
            installer.v2_install_cluster(cluster_id)
            raise AssertionError("v2_install_cluster succeeded on a cluster that is not ready")
        except ApiException as e:
            assert e.status == 409, f"status {e.status}: {e.body}"
            err = client.deserialize(_Body(json.loads(e.body)), "Error")
            assert err.kind == "Error" and err.id == 409 and err.code == "409" and err.reason, err
        ok(f"v2_install_cluster is refused with 409 ({err.reason})")

        try:
            installer.v2_update_cluster_finalizing_progress(cluster_id, asc.ClusterFinalizingProgress(finalizing_stage="Waiting for cluster operators"))
            raise AssertionError("finalizing progress accepted on a cluster that is not finalizing")
        except ApiException as e:
            assert e.status == 409, f"status {e.status}: {e.body}"
        ok("v2_update_cluster_finalizing_progress is refused with 409 before finalizing")

        # ---- deregister a host
        installer.v2_deregister_host(infra_env_id, host_ids[2])
        left = strict(client, installer.v2_list_hosts(infra_env_id), "Host")
        assert sorted(h.id for h in left) == sorted(host_ids[:2]), [h.id for h in left]
        try:
            installer.v2_get_host(infra_env_id, host_ids[2])
            raise AssertionError("the deregistered host is still there")
        except ApiException as e:
            assert e.status == 404, f"status {e.status}: {e.body}"
        ok("v2_deregister_host removes the host (then 404)")

        # ---- day 2: import a cluster; a cluster that is not installed cannot be opened; day-1 hosts are not installed alone
        imported = installer.v2_import_cluster(
            asc.ImportClusterParams(name="scale-up-compat", api_vip_dnsname="api.compat-2.example.com", openshift_cluster_id=str(uuid.uuid4()), openshift_version="1.31")
        )
        assert isinstance(imported, asc.Cluster), imported
        assert (imported.kind, imported.status, imported.name, imported.base_dns_domain, imported.imported) == ("AddHostsCluster", "adding-hosts", "compat-2", "example.com", True), imported
        ok(f"v2_import_cluster registers {imported.id} as an AddHostsCluster in adding-hosts")
        for call, expect in ((lambda: installer.transform_cluster_to_day2(cluster_id), 400), (lambda: installer.v2_install_host(infra_env_id, host_ids[0]), 409), (lambda: installer.v2_reset_host(infra_env_id, host_ids[0]), 409)):
            try:
                call()
                raise AssertionError(f"expected {expect}")
            except ApiException as e:
                assert e.status == expect, f"status {e.status}: {e.body}"
        ok("transform_cluster_to_day2 refuses a cluster that is not installed (400); v2_install_host and v2_reset_host refuse a day-1 host (409)")
        installer.v2_deregister_cluster(imported.id)

        # ---- the pull secret never leaves the service
        final = installer.v2_get_cluster(cluster_id)
        assert final.pull_secret_set is True
        leaks = [b for b in client.bodies if PULL_SECRET_AUTH.encode() in (b if isinstance(b, bytes) else str(b).encode())]
        assert not leaks, f"{len(leaks)} response bodies contain the pull secret"
        ok(f"the pull secret appears in none of the {len(client.bodies)} response bodies (pull_secret_set True)")

        completed = True
    finally:
        failed = 0 if completed else 1
        print(f"compat: {passed} passed, {failed} failed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
