#!/usr/bin/env bash
# The MinIO server, for the S3 storage tests (-mod=mod: MinIO's module needs its own go.mod resolution).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
GOFLAGS=-mod=mod exec bash scripts/install-go-tool.sh minio github.com/minio/minio "$MINIO_GO_VERSION"
