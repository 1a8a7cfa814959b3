# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# plot.gp - turn the benchmark's CSV into a chart of ratios to glibc.
#
#   gnuplot -e "csv='bench/results.csv'; out='bench/results.png'" bench/plot.gp
#
# The CSV comes from `bench --csv FILE` (bench/run.sh does both steps): one
# row per workload and allocator, with the median and the range (min-max)
# over the interleaved rounds of the per-round ratio to glibc+bzero on CPU
# time.  Points: the median; bars: the range; one colour per allocator,
# log scale (1 = as fast as glibc+bzero).  Workload indices: the W_ enum
# in bench/bench.h.

if (!exists("csv")) csv = 'bench/results.csv'
if (!exists("out")) out = 'bench/results.png'

set datafile separator ','
set datafile missing 'nan'
set terminal pngcairo size 1300,560 font 'sans,10'
set output out

set title 'secretmem allocator benchmark: time / glibc+bzero time, per round, CPU time (median and range; lower is better)'
set ylabel 'x glibc+bzero (log scale)'
set logscale y 10
set grid ytics mytics
set key top left
set xrange [-0.6:16.6]
set xtics rotate by -30 ('pair' 0, 'batch' 1, 'random 16-512' 2, '1 thread' 3, '2 threads' 4, \
    'random 1-64K' 5, 'chain fresh' 6, 'chain warm' 7, 'chain churn' 8, 'chain trim' 9, \
    'chain fork' 10, 'grow' 11, 'pair fresh' 12, 'pair warm' 13, 'pair churn' 14, \
    'pair trim' 15, 'pair fork' 16)
set ytics nomirror
set arrow from -0.6,1 to 16.6,1 nohead dt 2 lc rgb 'gray40'

names = 'secretmem mimalloc jemalloc openssl-sh sodium naive-memfd'
plot for [i=1:words(names)] csv skip 1 \
     using ($1 + (i - 3.5) * 0.1):(strcol(3) eq word(names, i) ? $6 : NaN):7:8 \
     with yerrorbars pt 7 ps 0.8 title word(names, i)
