#!/bin/sh
# Whole-process timings of `snailtrail critical-path` on generated Jaeger exports
# (docs/PERFORMANCE.md, "Span traces"): 1,000 and 10,000 checkout traces and one trace of
# about 1 M spans, against Python's json.load of the same file (the floor under any
# Python tool) and, if OLD is set, another snailtrail binary (before/after a change).
#   scripts/bench-spans.sh [DIR]      (DIR: where the files go, default /tmp/spans-bench)
#   OLD=/path/to/old/snailtrail scripts/bench-spans.sh
set -eu
dir=${1:-/tmp/spans-bench}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/bin/snailtrail}
mkdir -p "$dir"
[ -s "$dir/t1k.json" ] || python3 "$here/scripts/gen-spans.py" --traces 1000 -o "$dir/t1k.json"
[ -s "$dir/t10k.json" ] || python3 "$here/scripts/gen-spans.py" --traces 10000 --seed 2 -o "$dir/t10k.json"
[ -s "$dir/huge.json" ] || python3 "$here/scripts/gen-spans.py" --traces 1 --items 333000 --seed 3 -o "$dir/huge.json"
measure() {  # label, command...
  label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$dir/time.txt" "$@" > /dev/null
  read -r wall user sys rss < "$dir/time.txt"
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$wall" "$user" "$sys" "$((rss / 1024))"
}
printf '| run | wall s | user s | sys s | max RSS MiB |\n| --- | --- | --- | --- | --- |\n'
for f in t1k.json t10k.json huge.json; do
  size=$(($(stat -c %s "$dir/$f") / 1048576))
  measure "$f ($size MiB): python3 json.load" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/$f"
  if [ -n "${OLD:-}" ]; then
    measure "$f: old critical-path" "$OLD" critical-path "$dir/$f" -o "$dir/old.out"
  fi
  measure "$f: critical-path" "$bin" critical-path "$dir/$f" -o "$dir/new.out"
  measure "$f: critical-path --threads 1" "$bin" critical-path "$dir/$f" --threads 1 -o /dev/null
  measure "$f: critical-path --format folded" "$bin" critical-path "$dir/$f" --format folded -o /dev/null
  if [ -n "${OLD:-}" ]; then
    cmp -s "$dir/old.out" "$dir/new.out" && echo "<!-- $f: same output -->" || echo "<!-- $f: OUTPUT DIFFERS -->"
  fi
done
