#!/bin/sh
# CTest: under `mpirun -np 2` the 250 ms intervals and the latency of --stats-json cover
# every rank (docs/RUNTIME.md "Several processes"): the intervals' records sum to all
# records of the summary (both ranks' sources), the CCDF has samples from both ranks'
# probes (2 per epoch), and rank 0 prints the interval lines once.
# Exit 77 (skipped) when mpirun or python3 is missing.
bin=$1
. "$(dirname "$0")/mpi_prologue.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir" "$ompi_tmp"' EXIT
out=$($mpirun_lo -np 2 "$bin" run keycount --workers 2 --rate 100000 \
  --duration 800ms --keys 1000 --stats-json "$dir/s.json" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
summary=$(echo "$out" | grep "^keycount: .* records in .* on 4 workers")
[ -n "$summary" ] || { echo "FAIL: no summary on 4 workers"; exit 1; }
total=$(echo "$summary" | sed 's/^keycount: \([0-9]*\) records.*/\1/')
epochs=$(echo "$out" | sed -n 's/^latency CCDF over \([0-9]*\) epochs:/\1/p')
lines=$(echo "$out" | grep -c "^t=0.25s records=")
[ "$lines" -eq 1 ] || { echo "FAIL: $lines lines for the first interval (rank 0 alone prints)"; exit 1; }
python3 - "$dir/s.json" "$total" "$epochs" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
total, epochs = int(sys.argv[2]), int(sys.argv[3])
iv = d["intervals"]
s = sum(x["records"] for x in iv)
print(f"intervals {len(iv)}, records {s} (summary {total}), CCDF over {epochs} epochs")
assert total == 80000, f"an 800 ms run at 100000/s generates 80000 records, got {total}"
assert s == total, f"intervals sum to {s}, not all {total} records"
# Each interval has records from both ranks' sources: half of them each, ~12500 per 250 ms.
assert all(x["records"] > 0 for x in iv[:3]), iv
# Latency: one sample per completed epoch per rank: 800 epochs x 2 ranks.
assert 2 * 790 <= epochs <= 2 * 800, epochs
assert any(x["p99_ms"] > 0 for x in iv) and len(d["ccdf"]) > 0
assert abs(d["ccdf"][0][1] - 1.0) < 1e-9
PY
echo PASS
