#!/bin/bash
# Whole-process benchmark of `snailtrail logs templates` and `logs flows` (docs/LOGS.md
# "Speed"): logs of mostly unique tokens (word variables the built-in masks cannot see,
# request ids, 1 line in 5 a random word salad that makes a template of its own), at
# 100 k, 400 k and 2 M lines. Prints CPU seconds, lines per minute of CPU and max RSS
# from /usr/bin/time. Targets (issue 34): linear time, >= 1 M lines/min, <= 500 MB.
# `flows` reads the (regular) file twice: mining, then the identifier census.
# Usage: scripts/logs-bench.sh [LINES...]   (default 100000 400000 2000000)
# Needs build/bin/snailtrail, python3 and /usr/bin/time. Writes to a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/build/bin/snailtrail}
WORK=$(mktemp -d /tmp/snailtrail-logs-bench-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100000 400000 2000000)

gen() {  # gen LINES FILE: a service log of mostly unique tokens, reproducible
  python3 - "$1" "$2" <<'EOF'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(34)
letters = "abcdefghijklmnopqrstuvwxyz"
def word(k=7):
    return "".join(rng.choice(letters) for _ in range(k))
users = [word() for _ in range(50000)]
t0 = 1709290800
with open(path, "w") as f:
    for i in range(n):
        req = "req-%x" % rng.getrandbits(48)
        kind = rng.randrange(10)
        if kind == 0:
            msg = "User %s logged in from %s" % (rng.choice(users), word())
        elif kind == 1:
            msg = "Cache miss for key %s in region %s" % (word(10), word(5))
        elif kind == 2:
            msg = "Handling %s for customer %s" % (req, rng.choice(users))
        elif kind == 3:
            msg = "Completed %s status 200 in %d ms" % (req, rng.randrange(1, 900))
        elif kind == 4:
            msg = "Order %s created for request %s" % (word(8), req)
        elif kind == 5:
            msg = "Deleted file %s %s" % (word(6), word(6))
        elif kind == 6:
            msg = "Forwarding %s to %s-service" % (req, rng.choice(users))
        elif kind == 7:
            msg = "Session %s expired after %d s" % (word(12), rng.randrange(1000))
        else:  # a word salad: a template of its own
            msg = " ".join(word(rng.randrange(3, 9)) for _ in range(rng.randrange(4, 12)))
        ts = t0 + i // 1000
        f.write("2024-03-01T%02d:%02d:%02d.%03dZ INFO [exec-%d] c.e.Svc - %s\n" % (
            ts // 3600 % 24, ts // 60 % 60, ts % 60, i % 1000, rng.randrange(16), msg))
EOF
}

printf '%-10s %-10s %10s %14s %10s\n' command lines "cpu s" "lines/min" "max RSS"
for n in "${SIZES[@]}"; do
  gen "$n" "$WORK/svc.log"
  for cmd in templates flows; do
    /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$BIN" logs "$cmd" "$WORK/svc.log" \
      -o "$WORK/out" >/dev/null
    read -r user sys rss <"$WORK/time"
    python3 -c "
u, s, r, n = $user, $sys, $rss, $n
cpu = u + s
print('%-10s %-10d %10.2f %14.0f %7.0f MB' % ('$cmd', n, cpu, n / cpu * 60 if cpu else 0, r / 1024))"
  done
done
