#!/usr/bin/env python3
"""Sums Nsight Compute's per-launch GPU times by kernel and grid.

Reads the CSV that `ncu --metrics gpu__time_duration.sum --csv` prints (other lines are skipped)
and prints, largest first: the kernel's total µs over the launches, its launch count, µs a launch,
its grid and its name (template arguments kept, parameters dropped). With the launches of one kind
per layer known (e.g. the gate/up product), total / layers gives µs a layer (docs/PERFORMANCE.md).

usage: ncu-sum.py NCU.log [TOP=30]
"""
import collections
import csv
import re
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = csv.reader(lines)
    header = next(rows, None)
    if header is None:
        print(f"{path}: no CSV rows")
        return
    sums = collections.defaultdict(lambda: [0.0, 0])
    total = 0.0
    for row in rows:
        d = dict(zip(header, row))
        if d.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\(.*", "", d.get("Kernel Name", ""))[:100]
        us = float(d.get("Metric Value", "0").replace(",", "")) / 1000.0
        key = (name, d.get("Grid Size", ""))
        sums[key][0] += us
        sums[key][1] += 1
        total += us
    launches = sum(n for _, n in sums.values())
    print(f"{path}: {launches} launches, {total:.1f} us")
    for (name, grid), (us, n) in sorted(sums.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{us:10.1f} us {n:5d}x {us / n:8.2f} us  {grid:16s} {name}")


if __name__ == "__main__":
    main()
