#!/usr/bin/env bash
# PID 1 of one simulated discovery host (tests only). Started by test/support/upstream-agents.ts as
#   ip netns exec <host ns> unshare --pid --fork --kill-child --mount-proc --uts host-init.sh AGENT_ARGS…
# so the host has its own network, PID, mount and UTS namespaces, and the agent's
# `nsenter --target 1 …` (how it runs every tool "on the host") lands in this host's namespaces.
# Environment: LANDFALL_HOST_DIR (this host's folder), LANDFALL_HOSTNAME, LANDFALL_SCRATCH_DEV
# (its loop device), LANDFALL_BOARD_SERIAL, LANDFALL_AGENT_BIN, LANDFALL_SHIM_STATE.
set -euo pipefail
dir="${LANDFALL_HOST_DIR:?}"
scratch="${LANDFALL_SCRATCH_DEV:?}"
hostname "${LANDFALL_HOSTNAME:?}"

# The host's own /var/log: the agent's text logs, the logs it gathers and uploads.
mount --bind "$dir/log" /var/log

# chronyd's command socket lives in /run/chrony; each host runs its own chronyd.
mkdir -p /run/chrony
mount -t tmpfs -o mode=0750 lf-chrony /run/chrony

# Every disk node of the machine is this host's scratch loop device, in this mount namespace
# only: the inventory still reports the machine's disks (sysfs), but whatever the agent writes to
# "the install disk" (the disk speed check's fio) lands on the scratch device.
want=$(stat -L -c %t:%T "$scratch")
for sys in /sys/class/block/*; do
  name=$(basename "$sys")
  case "$name" in loop*|zram*|ram*) continue ;; esac
  node="/dev/$name"
  [ -b "$node" ] || continue
  mount --bind "$scratch" "$node"
  [ "$(stat -L -c %t:%T "$node")" = "$want" ] || { echo "host-init: $node is not the scratch device after the bind mount" >&2; exit 1; }
done

# The agent derives the host id from the motherboard serial when there is one (DMI), else the
# system UUID, else the lowest MAC address. On machines with DMI every host would share the
# machine's serial: give each its own.
if [ -e /sys/class/dmi/id/board_serial ]; then
  printf '%s\n' "${LANDFALL_BOARD_SERIAL:?}" >"$dir/board_serial"
  mount --bind "$dir/board_serial" /sys/class/dmi/id/board_serial
fi

# -x: never touch the machine's clock (every host shares the kernel's); it still reports sync state.
chronyd -x -u root -d -f "$dir/chrony.conf" >>"$dir/log/chronyd.log" 2>&1 &
# A host boots with its time source already chosen (seconds here): wait for it, up to 30 s, so the
# agent's first NTP report is not taken before chronyd picked the switch's server.
for _ in $(seq 1 60); do chronyc -n sources 2>/dev/null | grep -q '^\^\*' && break; sleep 0.5; done

export PATH="$dir/bin:$PATH"
"$LANDFALL_AGENT_BIN/agent" "$@" >>"$dir/log/agent-stdout.log" 2>&1 &
# PID 1 stays a shell that reaps the tools' orphans; the host ends when the agent does.
wait "$!"
