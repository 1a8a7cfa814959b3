#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# run.sh - build and run the allocator benchmark, keep its table and CSV,
# and draw the plot.
#
#   sh bench/run.sh [bench options, e.g. --quick]
#
# Environment: BUILD (build directory, default build), OUT (directory for
# results.txt, results.csv and results.png, default bench).
set -eu

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${OUT:-bench}

make BUILD="$BUILD" "$BUILD/bench/bench"
mkdir -p "$OUT"
"$BUILD/bench/bench" --csv "$OUT/results.csv" "$@" | tee "$OUT/results.txt"
if command -v gnuplot >/dev/null 2>&1; then
	gnuplot -e "csv='$OUT/results.csv'; out='$OUT/results.png'" bench/plot.gp
	echo "plot written to $OUT/results.png"
else
	echo "gnuplot not found: no plot (apt-get install gnuplot-nox)" >&2
fi
