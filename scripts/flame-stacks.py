#!/usr/bin/env python3
"""Writes N distinct folded stacks (depth 8-24 over 20,000 C++-like names, deeper frames
rarer) to stdout: the input of the flame graph measurement in docs/FLAME.md, the same
shape as bench/bench_flame.cpp's.

    scripts/flame-stacks.py 1000000 > stacks.folded
    /usr/bin/time -v build/bin/snailtrail flamegraph stacks.folded --format svg -o g.svg
"""
import random
import sys

random.seed(1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
names = [f"ns{i % 50}::Class{i % 997}::method_{i}" for i in range(20000)]
seen = set()
out = sys.stdout
while len(seen) < n:
    depth = random.randint(8, 24)
    stack = ["app"] + [names[min(int(random.expovariate(1 / (200 * (k + 1)))), 19999)]
                       for k in range(depth)]
    line = ";".join(stack)
    if line in seen:
        continue
    seen.add(line)
    out.write(f"{line} {random.randint(1, 50)}\n")
