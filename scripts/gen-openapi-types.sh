#!/usr/bin/env bash
# Generates the TypeScript types of the REST API from its OpenAPI document.
#   scripts/gen-openapi-types.sh            writes src/api/openapi/schema.generated.ts
#   scripts/gen-openapi-types.sh OUT_FILE   writes OUT_FILE instead (the unit test
#                                           uses this to check the committed file is current)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-src/api/openapi/schema.generated.ts}"
npx --no-install openapi-typescript src/api/openapi/openapi.yaml \
  --output "$out" \
  --root-types \
  --default-non-nullable=false
