# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
# plot.gp - turn the benchmark's CSV into a bar chart (log scale).
#
#   gnuplot -e "csv='bench/results.csv'; out='bench/results.png'" bench/plot.gp
#
# The CSV comes from `bench --csv FILE` (bench/run.sh does both steps).
# Bars: ns per alloc+write+free for 32-byte pairs, the 1,000-live batch and
# random sizes 16-512 B, one cluster per allocator.  The bars use the CPU
# time of the benchmark thread (columns 5-7): on an idle machine it equals
# the wall time (columns 2-4), on a busy one it leaves out the waiting.

if (!exists("csv")) csv = 'bench/results.csv'
if (!exists("out")) out = 'bench/results.png'

set datafile separator ','
set datafile missing 'nan'
set terminal pngcairo size 1000,560 font 'sans,10'
set output out

set title 'secretmem allocator benchmark: time per alloc + write + free, thread CPU time (lower is better)'
set ylabel 'ns (log scale)'
set logscale y 10
set yrange [1:*]
set format y '10^{%L}'
set grid ytics mytics
set key top left
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xrange [-0.6:4.6]   # the bench always writes five allocators
set xtics nomirror
set ytics nomirror

plot csv skip 1 using 5:xtic(1) title '32 B pairs', \
     ''  skip 1 using 6 title 'batch of 1,000 x 32 B', \
     ''  skip 1 using 7 title 'random 16-512 B, 1,000 live', \
     ''  skip 1 using ($0 - 0.27):5:(sprintf('%.0f', column(5))) with labels offset 0,0.7 notitle
