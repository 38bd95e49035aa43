#!/usr/bin/env bash
# The BMC tests' Redfish emulator, idempotently: sushy-tools (PyPI, pinned in
# test/bmc/requirements.txt) in .tools/sushy-venv, and the libvirt it drives
# (Debian: libvirtd with its QEMU driver, virsh, python3-libvirt). Nothing is
# started here: test/bmc starts libvirtd when it is not running and stops
# what it started.
#
# /etc/libvirt/qemu.conf: as root, libvirtd would run QEMU as a libvirt-qemu
# user with a security driver; the test VMs run as root with none, because
# their network is QEMU user-mode with a guestfwd that runs node (the only
# way the guest reaches the API, see test/bmc/redfish-lab.ts), which also
# needs QEMU's seccomp sandbox off (it forbids spawning).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.tools/sushy-venv"
req=test/bmc/requirements.txt
missing=()
command -v libvirtd >/dev/null 2>&1 || missing+=(libvirt-daemon)
[ -e /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so ] || missing+=(libvirt-daemon-driver-qemu)
command -v virsh >/dev/null 2>&1 || missing+=(libvirt-clients)
/usr/bin/python3 -c 'import libvirt' >/dev/null 2>&1 || missing+=(python3-libvirt)
/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
command -v qemu-system-x86_64 >/dev/null 2>&1 || missing+=(qemu-system-x86)
command -v qemu-img >/dev/null 2>&1 || missing+=(qemu-utils)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: ${missing[*]} missing and cannot be installed here (not root or no apt-get); the BMC tests will skip" >&2
    exit 0
  fi
  echo "setup: installing ${missing[*]} (Debian) for the BMC tests" >&2
  apt-get update -qq >/dev/null 2>&1 || true
  # --no-install-recommends: no libvirt-daemon-system, whose default NAT network would reach outside.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { echo "setup: could not install ${missing[*]}; the BMC tests will skip" >&2; exit 0; }
fi
if [ "$(id -u)" = 0 ]; then
  # libvirtd resolves its built-in QEMU user before it reads qemu.conf, so that user must exist
  # (libvirt-daemon-system would make it; it is left out above).
  getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
  getent passwd libvirt-qemu >/dev/null || useradd --system -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
  mkdir -p /var/lib/libvirt /var/log/libvirt
  conf=/etc/libvirt/qemu.conf
  mkdir -p /etc/libvirt
  touch "$conf"
  grep -q '^security_driver' "$conf" || printf '# Landfall BMC tests (scripts/install-bmc-emulator.sh)\nsecurity_driver = "none"\n' >> "$conf"
  grep -q '^user *=' "$conf" || printf 'user = "root"\ngroup = "root"\n' >> "$conf"
  # Without systemd nobody starts virtlogd: QEMU's output goes to a file directly.
  grep -q '^stdio_handler' "$conf" || printf 'stdio_handler = "file"\n' >> "$conf"
  # QEMU's seccomp sandbox (spawn=deny) would kill the VM when its guestfwd starts the pipe to the API.
  grep -q '^seccomp_sandbox' "$conf" || printf 'seccomp_sandbox = 0\n' >> "$conf"
fi
stamp="$VENV/.requirements-$(sha256sum "$req" | cut -c1-16)"
if [ -x "$VENV/bin/sushy-emulator" ] && [ -f "$stamp" ]; then exit 0; fi
echo "setup: installing sushy-tools (PyPI) into .tools/sushy-venv" >&2
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req" \
  || { echo "setup: could not install sushy-tools from PyPI; the BMC tests will skip" >&2; exit 0; }
rm -f "$VENV"/.requirements-*
touch "$stamp"
