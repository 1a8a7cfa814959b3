#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Interleaved comparison of fork() blocking time between builds of
fork_bench (e.g. this tree and an older commit).

  python3 bench/fork/compare.py ROUNDS LAYOUT:MIB[,LAYOUT:MIB...] NAME=BINARY...

Each round runs every binary once per case (order rotated per round), each
run doing 3 forks, of which the median counts.  Prints per case and binary
the median and range over rounds of wall and CPU ms, ms per MiB, and the
median and range of the per-round wall ratio of each binary to the first.
"""
import statistics
import subprocess
import sys


def run(binary, layout, mib):
    out = subprocess.run([binary, layout, str(mib), "3"], check=True, capture_output=True, text=True).stdout
    rows = [tuple(map(float, line.split())) for line in out.splitlines()]
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)


def main():
    rounds = int(sys.argv[1])
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in sys.argv[2].split(",")]
    bins = [tuple(a.split("=", 1)) for a in sys.argv[3:]]
    res = {(c, b[0]): [] for c in cases for b in bins}
    for rnd in range(rounds):
        for case in cases:
            order = bins[rnd % len(bins):] + bins[:rnd % len(bins)]
            for name, path in order:
                res[(case, name)].append(run(path, *case))
    print("case        build     wall ms median [min..max]   cpu ms median [min..max]   wall ms/MiB  ratio to %s" % bins[0][0])
    for case in cases:
        base = res[(case, bins[0][0])]
        for name, _ in bins:
            r = res[(case, name)]
            w = [x[0] for x in r]
            c = [x[1] for x in r]
            ratios = [x[0] / y[0] for x, y in zip(r, base)]
            per = statistics.median(w) / case[1] if case[1] else float("nan")
            print("%-6s %3d  %-8s %8.1f [%7.1f..%7.1f]   %8.1f [%7.1f..%7.1f]   %8.2f   %.2f [%.2f..%.2f]" % (
                case[0], case[1], name, statistics.median(w), min(w), max(w), statistics.median(c), min(c), max(c),
                per, statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
