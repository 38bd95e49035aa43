#!/usr/bin/env bash
# Installs whatever is missing, idempotently; `npm start` and `npm test` run it first.
#   --test   also the tools only the tests need (MinIO, coreos-installer, the assisted-service Python client,
#            Schemathesis, the upstream assisted-installer agent, Temporal's time-skipping test server,
#            kube-apiserver + etcd for the operator)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .state .tools

# npm dependencies: reinstall only when package-lock.json changed since the last install.
lock_sum=$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "node_modules/.landfall-lock-$lock_sum" ]; then
  echo "setup: installing npm dependencies" >&2
  # `npm install --no-save` rather than `npm ci`: npm 11 leaves other platforms'
  # optional packages (@swc/core-*) out of the lock file and then npm ci
  # refuses that lock file as out of sync. --no-save keeps the lock untouched.
  npm install --no-save --no-audit --no-fund --loglevel=error
  touch "node_modules/.landfall-lock-$lock_sum"
fi

bash scripts/install-temporal.sh
if [ "${1:-}" = "--test" ]; then
  bash scripts/install-system-tools.sh
  bash scripts/install-minio.sh
  bash scripts/install-ignition-validate.sh
  bash scripts/install-coreos-installer.sh
  bash scripts/install-compat-venv.sh
  bash scripts/install-fuzz-venv.sh
  bash scripts/install-assisted-agent.sh
  # sushy-tools (Redfish emulator) and libvirt for the BMC tests (test/bmc)
  bash scripts/install-bmc-emulator.sh
  # Temporal's time-skipping test server (Java, Maven Central) for the workflow tests (test/workflow)
  bash scripts/install-temporal-test-server.sh
  # A real kube-apiserver and etcd for the operator's tests (test/operator); cold about 7 CPU-minutes, cached.
  bash scripts/install-kube-apiserver.sh
fi

echo "setup: compiling TypeScript" >&2
npx --no-install tsc -p tsconfig.build.json
# The host agent as one file that runs with plain node on a discovery image.
npx --no-install esbuild agent/main.ts --bundle --platform=node --target=node20 --log-level=warning --outfile=dist/agent/landfall-agent.js
# Landfall's own discovery OS (Debian packages + this agent bundle), cached outside the checkout
# and linked as dist/discovery-os-image: `landfall dev` serves its live ISO as the x86_64 base image.
# Cold: about a minute plus downloads; then instant until the agent or discovery-os/ changes.
if dos=$(bash scripts/build-discovery-os.sh); then
  # Not dist/discovery-os: tsc emits the discovery OS's TypeScript there (the agent imports it),
  # and `ln` into an existing directory would make the link inside it instead.
  [ -L dist/discovery-os-image ] || rm -rf dist/discovery-os-image
  ln -sfn "$dos" dist/discovery-os-image
else
  echo "setup: the discovery OS could not be built (see above); discovery ISO downloads will answer 404 unless RELEASES_FILE names base images" >&2
fi
# The web UI (web/, React) into dist/web, which the API serves at `/`.
npx --no-install vite build web --logLevel warn
