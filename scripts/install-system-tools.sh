#!/usr/bin/env bash
# Debian packages the tests use: real network checks between simulated hosts
# (ping, arping inside network namespaces), promtool and prometheus (check /metrics, the alert rules and the
# Grafana board's queries against a real Prometheus) and xorriso, which builds the small
# synthetic live ISO of the discovery-image tests, tmux (the CLI's progress
# bars are captured from a real terminal), chromium (the web UI's browser
# tests drive Debian's headless Chromium through playwright-core) and
# qemu-system-x86, qemu-utils and ovmf (test/vm boots the discovery OS under TCG, BIOS and UEFI; the VM
# lab, test/support/vm-lab.ts, gives each VM a qcow2 disk), fdisk (its sfdisk reads the partition table
# the install wrote to a VM's disk). The upstream-agent test
# (test/peers) gives the real agent what a discovery host has: chrony (its NTP step asks
# chronyc; a chronyd in the test network serves time), dnsmasq (DNS answers for its
# domain-resolution step), nmap (free addresses) and fio (disk speed). Java and Maven run Temporal's time-skipping test
# server (test/workflow). Installed only when missing
# and when we are root; otherwise the tests that need them skip with a reason.
set -euo pipefail
missing=()
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
command -v arping >/dev/null 2>&1 || missing+=(arping)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v xorriso >/dev/null 2>&1 || missing+=(xorriso)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chronyd >/dev/null 2>&1 || missing+=(chrony)
command -v dnsmasq >/dev/null 2>&1 || missing+=(dnsmasq-base)
command -v nmap >/dev/null 2>&1 || missing+=(nmap)
command -v fio >/dev/null 2>&1 || missing+=(fio)
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
[ -f /usr/share/ovmf/OVMF.fd ] || missing+=(ovmf)
command -v qemu-img >/dev/null 2>&1 || missing+=(qemu-utils)
command -v sfdisk >/dev/null 2>&1 || missing+=(fdisk)
# Temporal's time-skipping test server is Java, fetched by Maven (scripts/install-temporal-test-server.sh).
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: ${missing[*]} missing and cannot be installed here (not root or no apt-get); the tests that need them will skip" >&2
  exit 0
fi
echo "setup: installing ${missing[*]} (Debian)" >&2
apt-get update -qq >/dev/null 2>&1 || true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || echo "setup: could not install ${missing[*]}; the tests that need them will skip" >&2
