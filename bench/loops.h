/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * loops.h - the timed loops of workloads 1-5 (pair, batch, random sizes,
 * the threads' work, and the 1 B-64 KiB churn of 5, the random loop over
 * larger sizes), and the random tables they read.  Each loop is a template
 * forced inline: allocators.c (and bench/experiments/owned_slabs.c)
 * instantiates each loop per allocator, so that in the timed loop the
 * allocator's calls are direct.
 */
#ifndef SECRETMEM_BENCH_LOOPS_H
#define SECRETMEM_BENCH_LOOPS_H

#include <stdint.h>
#include <string.h>
#include "bench.h"

#define INLINE static inline __attribute__((always_inline))

extern volatile uintptr_t sink; /* where the loops' results go */

/* The random tables of 3 and 5 (bench.h), the same in every run. */
INLINE void random_tables(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull;

	for (int i = 0; i < RND_N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		rnd_size[i] = 16 + (uint32_t)(x % 497);
		rnd_slot[i] = (uint32_t)((x >> 20) % LIVE);
		big_size[i] = 1 + (uint32_t)((x >> 32) % BIG_MAX);
	}
}

/* 1: k pairs of alloc(32) + write + free. */
INLINE double loop_pairs(alloc_fn a, release_fn f, long k)
{
	uintptr_t acc = 0;
	timer_start();
	for (long i = 0; i < k; i++) {
		unsigned char *p = a(SMALL);
		if (!p)
			oom(cur_name);
		memset(p, (int)i | 1, SMALL);
		ESCAPE(p);
		acc ^= (uintptr_t)p;
		f(p, SMALL);
	}
	double t = timer_stop();
	sink ^= acc;
	return t;
}

/* 2: k rounds of 1,000 allocs (each written), then 1,000 frees. */
INLINE double loop_batch(alloc_fn a, release_fn f, long k)
{
	static unsigned char *v[BATCH];
	uintptr_t acc = 0;
	timer_start();
	for (long r = 0; r < k; r++) {
		for (int i = 0; i < BATCH; i++) {
			unsigned char *p = a(SMALL);
			if (!p)
				oom(cur_name);
			memset(p, i | 1, SMALL);
			ESCAPE(p);
			v[i] = p;
		}
		for (int i = 0; i < BATCH; i++) {
			acc ^= (uintptr_t)v[i];
			f(v[i], SMALL);
		}
	}
	double t = timer_stop();
	sink ^= acc;
	return t;
}

/*
 * 3 and 5: a live set of `live` blocks of random sizes from table sz
 * (filled before the clock starts); each of the k timed operations frees a
 * random member and puts a new block of a random size (fully written) in
 * its place.
 */
INLINE double loop_random(alloc_fn a, release_fn f, long k, const uint32_t *sz, int live)
{
	static unsigned char *v[LIVE];
	static size_t vn[LIVE];
	uintptr_t acc = 0;

	for (int i = 0; i < live; i++) {
		vn[i] = sz[(unsigned)i * 7919u % RND_N];
		v[i] = a(vn[i]);
		if (!v[i])
			oom(cur_name);
		memset(v[i], 1, vn[i]);
	}
	timer_start();
	for (long i = 0; i < k; i++) {
		unsigned j = rnd_slot[i & (RND_N - 1)] % (unsigned)live;
		size_t n = sz[i & (RND_N - 1)];
		f(v[j], vn[j]);
		unsigned char *p = a(n);
		if (!p)
			oom(cur_name);
		memset(p, (int)i | 1, n);
		ESCAPE(p);
		acc ^= (uintptr_t)p;
		v[j] = p;
		vn[j] = n;
	}
	double t = timer_stop();
	for (int i = 0; i < live; i++)
		f(v[i], vn[i]);
	sink ^= acc;
	return t;
}

/* 4, per thread: k rounds of 100 x (alloc(32) + write), then frees. */
INLINE void loop_work(alloc_fn a, release_fn f, long k)
{
	unsigned char *v[THREAD_BATCH];
	uintptr_t acc = 0;

	for (long r = 0; r < k; r++) {
		for (int i = 0; i < THREAD_BATCH; i++) {
			unsigned char *p = a(SMALL);
			if (!p)
				oom(cur_name);
			memset(p, i | 1, SMALL);
			ESCAPE(p);
			v[i] = p;
		}
		for (int i = 0; i < THREAD_BATCH; i++) {
			acc ^= (uintptr_t)v[i];
			f(v[i], SMALL);
		}
	}
	sink ^= acc;
}

#endif
