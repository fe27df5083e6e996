#!/bin/sh
# Whole-process timings of `snailtrail critical-path` on generated Jaeger exports
# (docs/PERFORMANCE.md, "Span traces"): 1,000 and 10,000 checkout traces and one trace of
# about 1 M spans, against Python's json.load of the same file (the floor under any
# Python tool) and, if OLD is set, another snailtrail binary (before/after a change).
# Every command runs RUNS times (default 3), alternating (json.load, old, new, json.load,
# old, new, ...), each under `/usr/bin/time -v`; one table row per run, then the
# median CPU (user + sys) of each command and the ratio to json.load.
#   scripts/bench-spans.sh [DIR]      (DIR: where the files go, default /tmp/spans-bench)
#   OLD=/path/to/old/snailtrail RUNS=3 scripts/bench-spans.sh
set -eu
dir=${1:-/tmp/spans-bench}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$here/build/bin/snailtrail}
runs=${RUNS:-3}
mkdir -p "$dir"
[ -s "$dir/t1k.json" ] || python3 "$here/scripts/gen-spans.py" --traces 1000 -o "$dir/t1k.json"
[ -s "$dir/t10k.json" ] || python3 "$here/scripts/gen-spans.py" --traces 10000 --seed 2 -o "$dir/t10k.json"
[ -s "$dir/huge.json" ] || python3 "$here/scripts/gen-spans.py" --traces 1 --items 333000 --seed 3 -o "$dir/huge.json"
: > "$dir/cpu.txt"
measure() {  # label, command...
  label=$1
  shift
  /usr/bin/time -v -o "$dir/time.txt" "$@" > /dev/null
  awk -v label="$label" -v load="$(cut -d' ' -f1 /proc/loadavg)" -v cpu="$dir/cpu.txt" '
    /User time/ { user = $NF }
    /System time/ { sys = $NF }
    /Elapsed \(wall clock\)/ { n = split($NF, t, ":"); wall = t[n] + (n > 1 ? 60 * t[n - 1] : 0) + (n > 2 ? 3600 * t[n - 2] : 0) }
    /Maximum resident set size/ { rss = $NF }
    END {
      printf "| %s | %.2f | %.2f | %.2f | %.2f | %d | %s |\n", label, wall, user, sys, user + sys, rss / 1024, load
      printf "%s %.2f\n", label, user + sys >> cpu
    }' "$dir/time.txt"
}
printf '| run | wall s | user s | sys s | CPU s | max RSS MiB | load |\n| --- | --- | --- | --- | --- | --- | --- |\n'
for f in t1k.json t10k.json huge.json; do
  size=$(($(stat -c %s "$dir/$f") / 1048576))
  i=1
  while [ "$i" -le "$runs" ]; do
    measure "$f ($size MiB): python3 json.load" python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/$f"
    if [ -n "${OLD:-}" ]; then
      measure "$f: old critical-path" "$OLD" critical-path "$dir/$f" -o "$dir/old.out"
    fi
    measure "$f: critical-path" "$bin" critical-path "$dir/$f" -o "$dir/new.out"
    i=$((i + 1))
  done
  if [ -n "${OLD:-}" ]; then
    cmp -s "$dir/old.out" "$dir/new.out" && echo "<!-- $f: same output -->" || echo "<!-- $f: OUTPUT DIFFERS -->"
  fi
done
# Medians of the CPU column per command, and json.load's over each.
sort "$dir/cpu.txt" | awk '
  { label = $0; sub(/ [^ ]*$/, "", label); v[label] = v[label] " " $NF }
  END { for (l in v) { n = split(substr(v[l], 2), x, " "); for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
        print "median CPU s: " l ": " x[int((n + 1) / 2)] } }' | sort
