#!/usr/bin/env bash
# TEST SHIM standing in for podman on a simulated discovery host (tests only; never shipped).
#
# The upstream agent runs its tools as `podman run … <agent image> <tool> <args>` and the
# installer as `podman run … <installer image> <installer args>`. There are no images here:
# this shim runs the same multi-call agent binary as <tool> (its argv[0] picks the tool), and
# runs a stand-in for the installer that records its arguments and waits to be stopped.
# Only what the agent asks of podman is handled: run, ps, rm, stop, images, pull.
#
# Environment (set by host-init.sh): LANDFALL_AGENT_BIN (folder of argv[0]-named links to the
# agent binary), LANDFALL_SHIM_STATE (per-host folder: containers, installer runs, logs).
set -euo pipefail
state="${LANDFALL_SHIM_STATE:?}"
mkdir -p "$state/containers"
log() { printf '%s podman-shim[%s]: %s\n' "$(date +%T)" "$$" "$*" >>"$state/podman-shim.log"; }
log "$*"

# A "container" is a process whose pid is recorded under its name; it runs while the pid lives.
alive() { local f="$state/containers/$1"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
live_names() { for f in "$state"/containers/*; do [ -e "$f" ] || continue; n=$(basename "$f"); alive "$n" && echo "$n"; done; true; }
stop_container() {
  local name="$1" grace="$2" f="$state/containers/$1"
  if alive "$name"; then
    local pid; pid=$(cat "$f")
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((grace * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    echo "$name" >>"$state/stopped"
  fi
  rm -f "$f"
}

cmd="${1:-}"; shift || true
case "$cmd" in
  ps)
    # `ps --format '{{.Names}}'` lists names; `ps --quiet --filter name=X` prints an id when X runs.
    filter=""
    while [ $# -gt 0 ]; do case "$1" in --filter) filter="${2#name=}"; shift 2 ;; --filter=*) filter="${1#--filter=name=}"; shift ;; *) shift ;; esac; done
    if [ -n "$filter" ]; then live_names | grep -x -- "$filter" | sed 's/^/shim-/' || true; else live_names; fi
    exit 0 ;;
  rm)
    for a in "$@"; do case "$a" in -*) ;; *) stop_container "$a" 0 ;; esac; done
    exit 0 ;;
  stop)
    grace=10
    while [ $# -gt 0 ]; do case "$1" in -t|--time) grace="$2"; shift 2 ;; -*) shift ;; *) stop_container "$1" "$grace"; shift ;; esac; done
    exit 0 ;;
  images)
    # Every image is "present": nothing is pulled in tests.
    echo "shim-image-id"; exit 0 ;;
  pull)
    exit 0 ;;
  run) ;;
  *)
    echo "podman shim: unsupported command '$cmd'" >&2; exit 125 ;;
esac

# podman run [options] IMAGE [COMMAND [ARG...]]
name="" volumes=()
while [ $# -gt 0 ]; do
  case "$1" in
    -v|--volume) volumes+=("$2"); shift 2 ;;
    --volume=*) volumes+=("${1#--volume=}"); shift ;;
    --name) name="$2"; shift 2 ;;
    --name=*) name="${1#--name=}"; shift ;;
    -e|--env)
      # `--env NAME` passes the caller's variable through (it is inherited); NAME=VALUE sets it.
      case "$2" in *=*) export "${2?}" ;; esac; shift 2 ;;
    --env=*) v="${1#--env=}"; case "$v" in *=*) export "${v?}" ;; esac; shift ;;
    --entrypoint|-w|--workdir|-u|--user|--network|--net|--pid|--uts|--ipc|--pids-limit|--security-opt|--cap-add|--device|--label|-l|--log-driver|--pull|--restart)
      shift 2 ;;
    --) shift; break ;;
    -*) shift ;;  # boolean flags and --flag=value forms: --privileged, --rm, -ti, --net=host, …
    *) break ;;
  esac
done
image="${1:?podman shim: run needs an image}"; shift
[ -z "$name" ] || { alive "$name" && { echo "podman shim: container name $name is in use" >&2; exit 125; }; echo $$ >"$state/containers/$name"; }

tool="${1:-}"
case "$tool" in
  agent|next_step_runner|inventory|free_addresses|disk_speed_check|logs_sender) shift ;;
  *)
    # Any other image is the installer: record how the agent started it, then wait to be stopped
    # (the real installer would write the disk and reboot the host).
    log "installer stand-in for $image: $*"
    printf '%s\n' "$image" "$@" >"$state/installer-$(date +%s%N).args"
    trap 'exit 143' TERM
    sleep 3600 & wait $!
    exit 0 ;;
esac

# Tool logs go to a text file in the host's own /var/log rather than to a journal that is not
# there. Go's flag parser stops at the first positional argument, so the flags go first.
logging=(--with-journal-logging=false --with-text-logging=true)
[ "$tool" = logs_sender ] && logging=(-with-journal-logging=false -with-text-logging=true)

# Volumes into /host/… are how the inventory sees the host's hardware (it reads a ghw chroot at
# /host); they are made in a mount namespace of this "container" alone. Others name the same
# path on both sides here (/dev:/dev, /var/log:/var/log) and need nothing.
host_mounts=()
for v in "${volumes[@]+"${volumes[@]}"}"; do
  src="${v%%:*}" rest="${v#*:}"; dst="${rest%%:*}"
  # A discovery host has udev (/run/udev, /dev/disk); this machine may not. Podman would refuse a
  # missing source; the shim leaves it out, and the inventory sees what the machine has.
  if [ ! -e "$src" ]; then log "no $src here: volume $v left out"; continue; fi
  case "$dst" in /host|/host/*) host_mounts+=("$src" "$dst") ;; esac
done
if [ ${#host_mounts[@]} -gt 0 ] && [ -z "${LANDFALL_SHIM_IN_MOUNTNS:-}" ]; then
  export LANDFALL_SHIM_IN_MOUNTNS=1
  exec unshare --mount --propagation private -- bash -c '
    set -euo pipefail
    mount -t tmpfs shim-host /host
    while [ $# -gt 2 ] && [ "$1" != -- ]; do
      src="$1" dst="$2"; shift 2
      if [ -d "$src" ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; touch "$dst"; fi
      mount --bind "$src" "$dst"
    done
    shift
    exec "$@"' shim-mounts "${host_mounts[@]}" -- "$LANDFALL_AGENT_BIN/$tool" "${logging[@]}" "$@"
fi
exec "$LANDFALL_AGENT_BIN/$tool" "${logging[@]}" "$@"
