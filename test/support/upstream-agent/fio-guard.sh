#!/usr/bin/env bash
# TEST GUARD in front of fio on a simulated discovery host (tests only). The agent's disk speed
# check writes to the install disk with fio. In the test every host's disk nodes are bind mounts
# of that host's scratch loop device (host-init.sh), so the machine's own disks are never
# written; this guard makes sure of it: a target that is not a loop device or a regular file
# under the test's folder is refused, and nothing is written.
set -euo pipefail
target=""
for a in "$@"; do case "$a" in --filename=*) target="${a#--filename=}" ;; esac; done
prev=""
for a in "$@"; do [ "$prev" = --filename ] && target="$a"; prev="$a"; done
target="${target//\\:/:}"
if [ -z "$target" ]; then echo "fio guard: no --filename" >&2; exit 1; fi
if [ -b "$target" ]; then
  # Major number 7 is the loop driver.
  major=$((16#$(stat -L -c %t "$target")))
  if [ "$major" != 7 ]; then echo "fio guard: refusing to write $target (block major $major is not a loop device)" >&2; exit 1; fi
elif [ -f "$target" ]; then
  case "$(realpath "$target")" in "${LANDFALL_SCRATCH_DIR:?}"/*) ;; *) echo "fio guard: refusing to write $target outside the test folder" >&2; exit 1 ;; esac
else
  echo "fio guard: refusing $target (not a loop device or a scratch file)" >&2; exit 1
fi
# What was measured, for the test: the path the agent asked for and the device behind it.
echo "$target $(stat -L -c %t:%T "$target")" >>"${LANDFALL_SHIM_STATE:?}/fio-targets"
exec "${LANDFALL_REAL_FIO:?}" "$@"
