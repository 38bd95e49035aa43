#!/usr/bin/env bash
# Builds the MinIO server (for the S3 storage tests) into .tools/bin, idempotently.
# Go's module and build caches (outside the checkout) make a rebuild in a fresh clone quick.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
TOOLS="$PWD/.tools"
stamp="$TOOLS/bin/.minio-$MINIO_GO_VERSION"
if [ -x "$TOOLS/bin/minio" ] && [ -f "$stamp" ]; then exit 0; fi
command -v go >/dev/null 2>&1 || { echo "setup: go is required to build MinIO for the S3 tests" >&2; exit 1; }
echo "setup: building MinIO $MINIO_GO_VERSION with go install (cold: several minutes)" >&2
mkdir -p "$TOOLS/bin"
GOBIN="$TOOLS/bin" GOFLAGS=-mod=mod go install "github.com/minio/minio@$MINIO_GO_VERSION"
rm -f "$TOOLS"/bin/.minio-*
touch "$stamp"
