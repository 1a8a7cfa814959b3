#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
#
# bench/heap_fork.sh [ROUNDS] [SIZES] - time of fork() per MiB of live heap,
# plain glibc against the heap module, interleaved: in each round, for each
# heap size (MiB), the plain program and the one under
# libsecretmem-heap.so run one after the other (21 forks each, median).
# Prints per size the median and range over rounds of the fork time of
# each, and the heap module's cost per MiB: (fork(heap, S) - fork(heap, 0))
# / S, median and range over rounds.  Run from the top of the tree after
# `make build/bench/heap_fork`.  MODE=exec: the child executes /bin/true
# at once, and the time is fork() + exec + its exit.
set -eu
ROUNDS=${1:-7}
SIZES=${2:-"0 1 4 16 64"}
B=${BUILD:-build}
PROG=$B/bench/heap_fork
MOD=$(realpath "$B/libsecretmem-heap.so")
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for s in $SIZES; do
		set -- $("$PROG" "$s" 21 ${MODE:-})
		echo "$r plain $s $1 $4" >> "$OUT"
		set -- $(LD_PRELOAD="$MOD" "$PROG" "$s" 21 ${MODE:-})
		echo "$r heap $s $1 $4" >> "$OUT"
	done
	r=$((r + 1))
done
python3 - "$OUT" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
data = {}
for r, kind, s, us, cpu in rows:
    data.setdefault((kind, int(s)), {})[int(r)] = float(us)
sizes = sorted({int(x[2]) for x in rows})
def fmt(v): return "%.0f (%.0f-%.0f)" % (st.median(v), min(v), max(v))
print("MiB  fork() plain us        fork() heap us          heap cost per MiB us")
for s in sizes:
    p = list(data[("plain", s)].values()); h = list(data[("heap", s)].values())
    per = ""
    if s:
        d = [(data[("heap", s)][r] - data[("heap", 0)][r]) / s for r in data[("heap", s)] if r in data[("heap", 0)]]
        per = fmt(d)
    print("%-4d %-22s %-23s %s" % (s, fmt(p), fmt(h), per))
PY
