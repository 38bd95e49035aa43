#!/usr/bin/env bash
# Builds the real coreos-installer (crates.io) into .tools/cargo/bin, idempotently.
# The tests use it to read back the Ignition and kernel arguments embedded in
# the discovery ISOs Landfall serves (`iso ignition show`, `iso kargs show`).
# Cold build: several minutes on 2 cores; cargo's registry cache (~/.cargo)
# makes a rebuild in a fresh clone skip the downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
TOOLS="$PWD/.tools"
stamp="$TOOLS/cargo/bin/.coreos-installer-$COREOS_INSTALLER_VERSION"
if [ -x "$TOOLS/cargo/bin/coreos-installer" ] && [ -f "$stamp" ]; then exit 0; fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo is required to build coreos-installer for the ISO tests" >&2; exit 1; }
# Its zstd-sys build links the system libzstd through pkg-config (Debian: libzstd-dev);
# openssl-sys and lzma-sys want libssl-dev and liblzma-dev the same way.
need=()
for pair in libzstd:libzstd-dev openssl:libssl-dev liblzma:liblzma-dev; do
  pkg-config --exists "${pair%%:*}" 2>/dev/null || need+=("${pair##*:}")
done
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]} (Debian) to build coreos-installer" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || echo "setup: could not install ${need[*]}" >&2
  else
    echo "setup: coreos-installer needs ${need[*]} (Debian) to build; not root, trying anyway" >&2
  fi
fi
echo "setup: building coreos-installer $COREOS_INSTALLER_VERSION with cargo install (cold: several minutes)" >&2
mkdir -p "$TOOLS/cargo"
# The build directory lives outside the checkout (like Go's build cache), so a fresh clone
# on the same machine links in seconds instead of compiling for minutes.
cargo install --locked --quiet --root "$TOOLS/cargo" --target-dir "${XDG_CACHE_HOME:-$HOME/.cache}/landfall/cargo-target" coreos-installer --version "$COREOS_INSTALLER_VERSION"
rm -f "$TOOLS"/cargo/bin/.coreos-installer-*
touch "$stamp"
