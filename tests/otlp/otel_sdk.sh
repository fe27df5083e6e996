#!/bin/sh
# The OpenTelemetry JS SDK against `serve --otlp` (otel_sdk.test.mjs). Exit 77 (skipped)
# without node or the npm packages (make deps installs them).
set -e
src=$(cd "$(dirname "$0")/../.." && pwd)
command -v node >/dev/null || { echo "skipped: no node"; exit 77; }
[ -d "$src/node_modules/@opentelemetry/sdk-trace-base" ] ||
  { echo "skipped: no node_modules/@opentelemetry (make deps)"; exit 77; }
SNAILTRAIL_BIN=$1 exec node --test "$src/tests/otlp/otel_sdk.test.mjs"
