#!/usr/bin/env bash
# The build enforces the layers (src/LAYERS): a stage's sources are compiled with only the
# stages below it on the include path. This compiles two one-line probes as if they were
# sources of the pag stage: one including a stage below (trace) must compile; one including
# a stage above (summary) must fail because that header is not found.
# Usage: layering_build.sh CXX BUILD_DIR
set -u
cxx=$1
layers=$2/layers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d "$layers/pag" ] || { echo "layering_build: $layers/pag missing (configure first)"; exit 1; }
echo '#include "trace/event.hpp"' >"$tmp/below.cpp"
echo '#include "summary/summary.hpp"' >"$tmp/above.cpp"
if ! "$cxx" -std=c++20 -fsyntax-only -I "$layers/pag" "$tmp/below.cpp" 2>"$tmp/below.err"; then
  echo "layering_build: pag cannot include trace/ (it may):"
  cat "$tmp/below.err"
  exit 1
fi
if "$cxx" -std=c++20 -fsyntax-only -I "$layers/pag" "$tmp/above.cpp" 2>"$tmp/above.err"; then
  echo "layering_build: pag could include summary/, a stage above it"
  exit 1
fi
if ! grep -q "summary/summary.hpp: No such file" "$tmp/above.err"; then
  echo "layering_build: the wrong-way include failed for another reason:"
  cat "$tmp/above.err"
  exit 1
fi
echo "layering_build: ok (a wrong-way include fails to compile)"
