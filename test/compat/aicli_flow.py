"""Drives Landfall with aicli, the community assisted-installer CLI (PyPI `aicli`).

Usage: aicli_flow.py   (settings in the environment, set by aicli.test.ts)
  LANDFALL_URL      the service, e.g. http://127.0.0.1:8090 (aicli adds /api/assisted-install)
  LANDFALL_FLEET    JSON list: the command that runs `landfall fleet` (simulated hosts)
  BASE_ISO          the base live ISO the service builds discovery images from
  WORK_DIR          an empty folder for aicli's HOME, downloads and manifests

Every step runs the `aicli` of this Python's venv as a user would, in a fresh
process, with AUTH_TYPE=none (aicli sends no token to a URL that is not Red
Hat's). A step passes when aicli exits 0 and its output or the files it wrote
say what they should: aicli prints some errors and still exits 0, so the exit
code alone proves little. Steps depend on each other; the first failure stops
the run. One line per step, then `aicli: N passed, M failed`. Exit code 0 when
every step passed, 1 otherwise.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import yaml

URL = os.environ["LANDFALL_URL"].rstrip("/")
FLEET = json.loads(os.environ["LANDFALL_FLEET"])
BASE_ISO = os.environ["BASE_ISO"]
WORK = os.environ["WORK_DIR"]
AICLI = os.path.join(os.path.dirname(sys.executable), "aicli")

CLUSTER = "aicli-demo"
API_VIP, INGRESS_VIP = "192.168.127.250", "192.168.127.251"
PULL_SECRET = {"auths": {"registry.example.com": {"auth": "c2VjcmV0LXB1bGwtc2VjcmV0LXZhbHVl"}}}
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx4l8jTj2tUiX4lUzTnI6FvR2d1eI8kXoW7hSg2gq1m aicli@landfall"
MANIFEST_A = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aicli-a\n  namespace: default\ndata:\n  from: aicli\n"
MANIFEST_B = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aicli-b\n  namespace: default\n"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
ZERO_TIME = "0001-01-01 00:00:00+00:00"

HOME = os.path.join(WORK, "home")
DOWNLOADS = os.path.join(WORK, "downloads")
MANIFESTS = os.path.join(WORK, "manifests")
MANIFESTS_BACK = os.path.join(WORK, "manifests-downloaded")


class StepFailed(Exception):
    pass


passed = 0
state = {}


def aicli(*args, timeout=120):
    """Runs aicli; returns its output (stdout then stderr, colours removed) or fails the step."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": HOME, "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
    try:
        p = subprocess.run([AICLI, "-U", URL, *args], cwd=WORK, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise StepFailed(f"aicli {' '.join(args)} did not end in {timeout} s; output:\n{ANSI.sub('', (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (e.stdout or ''))}")
    out = ANSI.sub("", p.stdout + (("\n" + p.stderr) if p.stderr else ""))
    if p.returncode != 0:
        raise StepFailed(f"aicli {' '.join(args)} exited {p.returncode}:\n{out}")
    return out


def check(cond, message):
    if not cond:
        raise StepFailed(message)


def step(title, fn):
    global passed
    started = time.monotonic()
    try:
        fn()
    except StepFailed as e:
        print(f"FAIL {title}\n{e}", flush=True)
        return False
    except Exception as e:  # a check that could not even run (a file missing, YAML unreadable)
        print(f"FAIL {title}: {type(e).__name__}: {e}", flush=True)
        return False
    passed += 1
    print(f"ok   {title} ({time.monotonic() - started:.1f} s)", flush=True)
    return True


def fields(out):
    """`key: value` lines of aicli's info commands."""
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def table_rows(out):
    """The rows of a PrettyTable, as lists of cells."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines() if line.startswith("|")]
    return rows[1:]


# ---------------------------------------------------------------- the steps


def info_service():
    out = aicli("info", "service")
    f = fields(out)
    check(f.get("url") == URL, f"url: {f.get('url')!r}")
    check(re.fullmatch(r"v\d+\.\d+\.\d+", f.get("release", "")), f"release: {f.get('release')!r}")
    check("1.31" in f.get("supported openshift versions", "").split(","), f"supported openshift versions: {f.get('supported openshift versions')!r}")
    check("supported operators:" in out, out)


def create_cluster():
    out = aicli("create", "cluster", "-P", "openshift_version=1.31", "-P", "domain=example.com", "-P", f"api_vip={API_VIP}", "-P", f"ingress_vip={INGRESS_VIP}", CLUSTER)
    check("Using version 1.31" in out, out)
    check(f"Creating infraenv {CLUSTER}_infra-env" in out, out)


def list_clusters():
    rows = table_rows(aicli("list", "cluster"))
    mine = [r for r in rows if r[0] == CLUSTER]
    check(len(mine) == 1 and mine[0][3] == "example.com", f"rows: {rows}")
    state["cluster_id"] = mine[0][1]


def info_cluster():
    f = fields(aicli("info", "cluster", CLUSTER))
    check(f.get("id") == state["cluster_id"] and f.get("openshift_version") == "1.31", f)
    # Not installed yet: AS's zero time, which `wait cluster` waits to change.
    check(f.get("install_completed_at") == ZERO_TIME, f"install_completed_at: {f.get('install_completed_at')!r}")


def export_cluster():
    out = aicli("export", "cluster", CLUSTER)
    data = yaml.safe_load("\n".join(line for line in out.splitlines() if not line.startswith("Exporting cluster")))
    check(data.get("name") == CLUSTER and data.get("base_dns_domain") == "example.com", data)
    check(data.get("disk_encryption") == {"enable_on": "none", "mode": "tpmv2", "tang_servers": None}, f"disk_encryption: {data.get('disk_encryption')}")
    check("pull_secret" not in data, "the export carries the pull secret")


def list_infraenvs():
    rows = table_rows(aicli("list", "infraenv"))
    mine = [r for r in rows if r[0] == f"{CLUSTER}_infra-env"]
    check(len(mine) == 1 and mine[0][2] == CLUSTER and mine[0][4] == "full-iso", f"rows: {rows}")
    state["infra_env_id"] = mine[0][1]


def info_iso():
    out = aicli("info", "iso", CLUSTER)
    urls = re.findall(r"https?://\S+", out)
    check(urls and f"/images/{state['infra_env_id']}/full.iso?image_token=" in urls[-1], out)
    state["iso_url"] = urls[-1]


def download_iso():
    aicli("download", "iso", "-p", DOWNLOADS, CLUSTER)
    iso = os.path.join(DOWNLOADS, f"{CLUSTER}.iso")
    check(os.path.getsize(iso) == os.path.getsize(BASE_ISO), f"{iso}: {os.path.getsize(iso)} bytes, the base image has {os.path.getsize(BASE_ISO)}")
    # The discovery image is the base image with this infra-env's Ignition embedded.
    with open(iso, "rb") as a, open(BASE_ISO, "rb") as b:
        check(a.read() != b.read(), "the downloaded ISO is the base image unchanged (no discovery Ignition embedded)")


def download_discovery_ignition():
    aicli("download", "discovery-ignition", "-p", DOWNLOADS, CLUSTER)
    with open(os.path.join(DOWNLOADS, f"discovery.ign.{CLUSTER}")) as f:
        ign = json.load(f)
    check(ign["ignition"]["version"].startswith("3."), ign.get("ignition"))
    check(SSH_KEY in json.dumps(ign), "the discovery Ignition does not carry the user's SSH key")


def boot_hosts():
    cmd = FLEET + ["fleet", "--url", URL, "--infra-env", state["infra_env_id"], "--count", "5", "--profiles", "control-plane:3,worker:2", "--poll-seconds", "0.5", "--duration-seconds", "600"]
    state["fleet_log"] = open(os.path.join(WORK, "fleet.log"), "w")
    state["fleet"] = subprocess.Popen(cmd, stdout=state["fleet_log"], stderr=subprocess.STDOUT, cwd=WORK)
    time.sleep(0.5)
    check(state["fleet"].poll() is None, f"landfall fleet exited {state['fleet'].returncode}")


def wait_hosts():
    out = aicli("wait", "hosts", "-n", "5", CLUSTER, timeout=120)
    check("Waiting for hosts to reach expected number 5" in out, out)


def list_hosts():
    rows = table_rows(aicli("list", "hosts"))
    mine = sorted(r for r in rows if r[3] == f"{CLUSTER}_infra-env")
    # The fleet names a host after its profile and its place in the fleet (the mix is spread over it).
    names = [r[0] for r in mine]
    check(len(names) == 5 and sum(n.startswith("control-plane-") for n in names) == 3 and sum(n.startswith("worker-") for n in names) == 2, f"hosts: {names}")
    check(all(r[4] == "known" and r[6].startswith("192.168.127.") for r in mine), f"rows: {mine}")
    # aicli names a host's cluster only in the first row of that cluster ('None' below it).
    check([r[2] for r in mine].count(CLUSTER) == 1, f"rows: {mine}")
    state["control_plane"] = names[0]
    state["worker"] = names[-1]


def info_host():
    f = fields(aicli("info", "host", state["control_plane"]))
    check(f.get("requested_hostname") == state["control_plane"] and f.get("status") == "known", f)
    check(f.get("cluster_id") == state["cluster_id"] and f.get("ip", "").startswith("192.168.127."), f)


def update_host():
    out = aicli("update", "host", state["worker"], "-P", "role=worker", "-P", "name=edge-worker")
    check("Updating host with id" in out, out)
    f = fields(aicli("info", "host", "edge-worker"))
    check(f.get("requested_hostname") == "edge-worker" and f.get("role") == "worker", f)


def update_cluster():
    aicli("update", "cluster", CLUSTER, "-P", "base_dns_domain=example.org")
    check(fields(aicli("info", "cluster", "-f", "base_dns_domain", CLUSTER)).get("base_dns_domain") == "example.org", "base_dns_domain unchanged")
    # `update cluster` also updates the infra-env (aicli sends the SSH key again): the image changes,
    # and download_url is a new URL for it rather than gone.
    url = fields(aicli("info", "infraenv", "-f", "download_url", CLUSTER)).get("download_url", "")
    check(url.startswith(URL) and url != state["iso_url"], f"download_url after the update: {url!r} (before: {state['iso_url']!r})")


def manifests_create():
    os.makedirs(MANIFESTS, exist_ok=True)
    with open(os.path.join(MANIFESTS, "50-aicli-a.yaml"), "w") as f:
        f.write(MANIFEST_A)
    with open(os.path.join(MANIFESTS, "50-aicli-b.yaml"), "w") as f:
        f.write(MANIFEST_B)
    out = aicli("create", "manifest", "--dir", MANIFESTS, CLUSTER)
    check("Uploading file 50-aicli-a.yaml" in out and "Uploading file 50-aicli-b.yaml" in out, out)
    rows = table_rows(aicli("list", "manifest", CLUSTER))
    check(sorted(rows) == [["50-aicli-a.yaml", "manifests"], ["50-aicli-b.yaml", "manifests"]], f"rows: {rows}")


def manifests_delete():
    out = aicli("delete", "manifest", "-y", CLUSTER, "50-aicli-b.yaml")
    check("Deleting file 50-aicli-b.yaml" in out, out)
    rows = table_rows(aicli("list", "manifest", CLUSTER))
    check(rows == [["50-aicli-a.yaml", "manifests"]], f"rows: {rows}")


def download_installconfig():
    aicli("download", "installconfig", "--path", DOWNLOADS, CLUSTER)
    with open(os.path.join(DOWNLOADS, f"install-config.yaml.{CLUSTER}")) as f:
        cfg = yaml.safe_load(f)
    check(cfg["metadata"]["name"] == CLUSTER and cfg["baseDomain"] == "example.org", cfg)
    check(cfg["controlPlane"]["replicas"] == 3 and cfg["compute"][0]["replicas"] == 2, f"controlPlane {cfg['controlPlane']}, compute {cfg['compute']}")
    check(cfg["platform"]["baremetal"]["apiVIPs"] == [API_VIP], cfg["platform"])


def info_validation():
    out = aicli("info", "validation", "--all", CLUSTER)
    rows = table_rows(out)
    # A ready cluster: its validations ran and none fails.
    check(len(rows) >= 5 and not [r for r in rows if r[2] == "failure"], out)


def wait_ready():
    aicli("wait", "cluster", "-s", "ready", CLUSTER, timeout=120)
    check(fields(aicli("info", "cluster", "-f", "status", CLUSTER)).get("status") == "ready", "not ready")


def start_cluster():
    out = aicli("start", "cluster", CLUSTER)
    check(f"Starting cluster {CLUSTER}" in out, out)
    status = fields(aicli("info", "cluster", "-f", "status,install_started_at", CLUSTER))
    check(status.get("status") in ("preparing-for-installation", "installing", "finalizing", "installed"), status)
    check(status.get("install_started_at", ZERO_TIME) != ZERO_TIME, status)


def wait_installed():
    aicli("wait", "cluster", CLUSTER, timeout=240)
    f = fields(aicli("info", "cluster", "-f", "status,install_completed_at,progress", CLUSTER))
    check(f.get("status") == "installed" and f.get("install_completed_at") != ZERO_TIME, f)


def list_hosts_installed():
    rows = [r for r in table_rows(aicli("list", "hosts")) if r[3] == f"{CLUSTER}_infra-env"]
    check(len(rows) == 5 and all(r[4] == "installed" for r in rows), f"rows: {rows}")
    check(sum(1 for r in rows if r[5] == "master(bootstrap)") == 1, f"rows: {rows}")


def download_kubeconfig():
    aicli("download", "kubeconfig", "--path", DOWNLOADS, CLUSTER)
    with open(os.path.join(DOWNLOADS, f"kubeconfig.{CLUSTER}")) as f:
        kc = yaml.safe_load(f)
    check(kc.get("kind") == "Config" and kc.get("apiVersion") == "v1", kc)
    check(kc["clusters"][0]["cluster"]["server"] == f"https://{API_VIP}:6443", kc["clusters"])
    check(kc["users"] and kc["current-context"], "no user or context")


def list_events():
    out = aicli("list", "event", CLUSTER)
    rows = table_rows(out)
    check(len(rows) >= 10, f"{len(rows)} events")
    messages = " ".join(r[1] for r in rows).lower()
    check("install" in messages and CLUSTER in messages, out[-2000:])


def download_manifests():
    os.makedirs(MANIFESTS_BACK, exist_ok=True)
    out = aicli("download", "manifests", "--path", MANIFESTS_BACK, CLUSTER)
    check("Downloading 50-aicli-a.yaml" in out, out)
    check(os.listdir(MANIFESTS_BACK) == ["50-aicli-a.yaml"], os.listdir(MANIFESTS_BACK))
    with open(os.path.join(MANIFESTS_BACK, "50-aicli-a.yaml")) as f:
        check(f.read() == MANIFEST_A, "the downloaded manifest differs from the uploaded one")


def stop_fleet():
    fleet = state.pop("fleet")
    fleet.terminate()
    code = fleet.wait(timeout=30)
    state["fleet_log"].close()
    check(code == 0, f"landfall fleet exited {code}; see {os.path.join(WORK, 'fleet.log')}")


def delete_cluster():
    out = aicli("delete", "cluster", "-y", CLUSTER)
    check(f"Deleting cluster {CLUSTER}" in out, out)
    check(all(r[0] != CLUSTER for r in table_rows(aicli("list", "cluster"))), "the cluster is still listed")
    check(all(r[0] != f"{CLUSTER}_infra-env" for r in table_rows(aicli("list", "infraenv"))), "its infra-env is still listed")


STEPS = [
    ("info service: component versions, releases and operators", info_service),
    ("create cluster (and its infra-env)", create_cluster),
    ("list cluster", list_clusters),
    ("info cluster", info_cluster),
    ("export cluster", export_cluster),
    ("list infraenv", list_infraenvs),
    ("info iso: download_url", info_iso),
    ("download iso: the discovery image", download_iso),
    ("download discovery-ignition", download_discovery_ignition),
    ("boot 5 simulated hosts (landfall fleet)", boot_hosts),
    ("wait hosts -n 5", wait_hosts),
    ("list hosts", list_hosts),
    ("info host", info_host),
    ("update host: role and name", update_host),
    ("update cluster (and infra-env): base domain, download_url refreshed", update_cluster),
    ("create manifest, list manifest", manifests_create),
    ("delete manifest", manifests_delete),
    ("download installconfig: replicas by role", download_installconfig),
    ("wait cluster -s ready", wait_ready),
    ("info validation", info_validation),
    ("start cluster", start_cluster),
    ("wait cluster (installed)", wait_installed),
    ("list hosts: installed", list_hosts_installed),
    ("download kubeconfig", download_kubeconfig),
    ("list event", list_events),
    ("download manifests", download_manifests),
    ("stop the fleet", stop_fleet),
    ("delete cluster (and its infra-env)", delete_cluster),
]


def main():
    for d in (HOME, os.path.join(HOME, ".ssh"), DOWNLOADS):
        os.makedirs(d, exist_ok=True)
    # What aicli reads by default: the SSH key from ~/.ssh, the pull secret from ./openshift_pull.json.
    with open(os.path.join(HOME, ".ssh", "id_ed25519.pub"), "w") as f:
        f.write(SSH_KEY + "\n")
    with open(os.path.join(WORK, "openshift_pull.json"), "w") as f:
        json.dump(PULL_SECRET, f)
    failed = 0
    try:
        for title, fn in STEPS:
            if not step(title, fn):
                failed = 1
                break
    finally:
        if "fleet" in state:
            state["fleet"].kill()
            state["fleet"].wait()
    not_run = len(STEPS) - passed - failed
    print(f"aicli: {passed} passed, {failed} failed" + (f", {not_run} skipped" if not_run else ""), flush=True)
    return 0 if failed == 0 and passed == len(STEPS) else 1


if __name__ == "__main__":
    if not shutil.which(AICLI):
        print(f"{AICLI} is missing: install test/compat/requirements.txt", file=sys.stderr)
        sys.exit(1)
    sys.exit(main())
