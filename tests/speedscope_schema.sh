#!/bin/sh
# `flamegraph --format speedscope` on real captures (a perf script text and the runtime's
# own profile), validated against speedscope's JSON schema (tests/schema/). Exit 77
# (skipped) without node or the npm packages.
set -e
bin=$1
src=$(cd "$(dirname "$0")/.." && pwd)
command -v node >/dev/null || { echo "skipped: no node"; exit 77; }
[ -d "$src/node_modules/ajv" ] && [ -d "$src/node_modules/speedscope" ] ||
  { echo "skipped: no node_modules (make deps)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" run wordcount --workers 2 --duration 400ms --keys 1000 --profile --profile-hz 997 \
  --trace "$dir/wc.snail" >/dev/null 2>&1
for mode in on-cpu off-cpu critical; do
  "$bin" flamegraph "$dir/wc.snail" --mode "$mode" --format speedscope -q -o "$dir/$mode.json"
done
printf 'main;a;b 3\nmain;a 2\nother;"q\\\\" 1\n' >"$dir/f.folded"
"$bin" flamegraph "$dir/f.folded" --format speedscope -q -o "$dir/folded.json"
node "$src/tests/schema/speedscope_schema.mjs" "$dir"/*.json
