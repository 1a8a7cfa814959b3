/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * sweep.c - workload 8, the slot-offset sweep: the pair time at every
 * 16-byte position in a page, max/min over the positions, in SWEEP_PROCS
 * fresh processes per allocator (the four fastest).  The child side
 * (--child sweep NAME PAIRS, with its diagnostic variables
 * BENCH_SWEEP_DEBUG, BENCH_SWEEP_PASSES and BENCH_SWEEP_MIGRATE) and the
 * parent side.
 */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"

double sweep[NALLOC][SWEEP_PROCS]; /* max/min pair time over positions */
double sweep_npos[NALLOC], sweep_same[NALLOC];

/*
 * 8: the pair (alloc(16) + write + free) at every 16-byte position in a
 * page: 16-byte blocks are allocated until one sits at every position (or
 * 50,000 were taken); then, per position, that block is freed and `pairs`
 * pairs are timed (an allocator that reuses the last freed block hands the
 * same one back each time), nine times over the positions; per position
 * the median CPU time.  Prints max/min over the positions, the number of
 * positions, and the share of pairs that got the freed block back.
 * Diagnostics (stderr): BENCH_SWEEP_DEBUG=1 prints each position's median
 * and block address; BENCH_SWEEP_PASSES=N measures N times over the same
 * blocks in the same process and prints each pass's max/min, its slowest
 * offset and the CPU it ran on (the last pass is the result); with
 * BENCH_SWEEP_MIGRATE=1 pass k is pinned to CPU k modulo the CPU count.
 */
#define POSITIONS 256
#define SWEEP_REPS 9

/* One pass: per position, the median of SWEEP_REPS timings into med[]. */
static void sweep_pass(const struct allocator *al, unsigned char **held, long pairs, double *med, long *same,
		       long *total)
{
	static double t[POSITIONS][SWEEP_REPS];

	for (int rep = 0; rep < SWEEP_REPS; rep++) {
		for (int pos = 0; pos < POSITIONS; pos++) {
			if (!held[pos])
				continue;
			unsigned char *b = held[pos];
			al->release(b, 16);
			timer_start();
			for (long i = 0; i < pairs; i++) {
				unsigned char *p = al->alloc(16);
				if (!p)
					oom(al->name);
				memset(p, (int)i | 1, 16);
				ESCAPE(p);
				*same += p == b;
				al->release(p, 16);
			}
			timer_stop();
			*total += pairs;
			t[pos][rep] = last_cpu / (double)pairs;
			held[pos] = al->alloc(16);
			if (!held[pos])
				oom(al->name);
		}
	}
	for (int pos = 0; pos < POSITIONS; pos++) {
		if (!held[pos])
			continue;
		qsort(t[pos], SWEEP_REPS, sizeof(double), cmp_double);
		med[pos] = t[pos][SWEEP_REPS / 2];
	}
}

int child_sweep(int a, long pairs)
{
	const struct allocator *al = &allocs[a];
	static unsigned char *held[POSITIONS], *extra[50000];
	static double med[POSITIONS];
	int npos = 0, nextra = 0;
	long same = 0, total = 0;
	const char *ps = getenv("BENCH_SWEEP_PASSES");
	int passes = ps && atoi(ps) > 1 ? atoi(ps) : 1;
	int debug = getenv("BENCH_SWEEP_DEBUG") != NULL, migrate = getenv("BENCH_SWEEP_MIGRATE") != NULL;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	child_init(a, OSSL_ARENA);
	cur_name = al->name;
	for (int i = 0; i < 50000 && npos < (int)(page_size / 16); i++) {
		unsigned char *p = al->alloc(16);
		if (!p)
			oom(al->name);
		memset(p, 1, 16);
		size_t pos = ((uintptr_t)p % page_size) / 16;
		if (pos < POSITIONS && !held[pos]) {
			held[pos] = p;
			npos++;
		} else {
			extra[nextra++] = p;
		}
	}
	double lo = INFINITY, hi = 0;
	for (int k = 0; k < passes; k++) {
		if (migrate && ncpu > 0) {
			cpu_set_t cs;
			CPU_ZERO(&cs);
			CPU_SET((int)(k % ncpu), &cs);
			sched_setaffinity(0, sizeof(cs), &cs);
		}
		sweep_pass(al, held, pairs, med, &same, &total);
		int hipos = 0;
		lo = INFINITY;
		hi = 0;
		for (int pos = 0; pos < POSITIONS; pos++) {
			if (!held[pos])
				continue;
			if (debug && k == passes - 1)
				fprintf(stderr, "%d %.2f %p\n", pos, med[pos], (void *)held[pos]);
			lo = med[pos] < lo ? med[pos] : lo;
			if (med[pos] > hi) {
				hi = med[pos];
				hipos = pos;
			}
		}
		if (passes > 1)
			fprintf(stderr, "pass %d cpu %d: %.3f, slowest at offset 0x%03x\n", k, sched_getcpu(), hi / lo,
				hipos * 16);
	}
	ESCAPE(extra);
	printf("%.4f %d %.4f\n", hi / lo, npos, (double)same / (double)total);
	return 0;
}

/* 8: SWEEP_PROCS processes per allocator, the allocators in turn. */
void sweep_processes(void)
{
	double out[3];
	char st[48], arg[32];

	snprintf(arg, sizeof(arg), "%ld", opt.sweep_pairs);
	for (int p = 0; p < SWEEP_PROCS; p++) {
		fprintf(stderr, "bench: slot-offset sweep, process %d of %d\n", p + 1, SWEEP_PROCS);
		for (int a = 0; a < NALLOC; a++) {
			sweep[a][p] = NAN;
			if (!allocs[a].available || a > A_JEMALLOC)
				continue;
			if (run_child("sweep", allocs[a].name, arg, out, 3, st, sizeof(st)) == 3) {
				sweep[a][p] = out[0];
				sweep_npos[a] = out[1];
				sweep_same[a] = out[2];
			} else {
				note_child_fail("sweep", a, st);
			}
		}
	}
}

