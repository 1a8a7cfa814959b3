/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_stress - 4 threads, 10^6 random malloc/calloc/realloc/free
 * operations in total.  Every block carries its own size (xor a key derived
 * from its address) in its first 8 bytes and a pattern derived from its
 * address after that; both are checked before every free and realloc, so a
 * block handed out twice, an overlap or a stray zeroing is caught.  Blocks
 * are passed between threads (freed by another thread than the one that
 * allocated them).  Under valgrind the number of operations is reduced.
 * SECRETMEM_TEST_SEED=<n> repeats a run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include "secretmem.h"
#include "tlib.h"

#define THREADS 4
#define SLOTS 256
#define XCHG 64

static long ops_per_thread = 250000;
static uint64_t base_seed;
static _Atomic(unsigned char *) xchg[XCHG];
static atomic_long handed_over, remote_frees, large_ops;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t key(const void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	return (a ^ (a >> 29)) * 0x9e3779b97f4a7c15ull;
}

/* Word i (i >= 1) of the pattern of a block that lived at addr. */
static uint64_t word(uint64_t k, size_t i)
{
	uint64_t z = k + i * 0xbf58476d1ce4e5b9ull;
	return z ^ (z >> 31);
}

static void fill(unsigned char *p, size_t n)
{
	uint64_t k = key(p), h = n ^ k;
	size_t i;

	memcpy(p, &h, 8);
	for (i = 8; i + 8 <= n; i += 8) {
		uint64_t w = word(k, i / 8);
		memcpy(p + i, &w, 8);
	}
	if (i < n) {
		uint64_t w = word(k, i / 8);
		memcpy(p + i, &w, n - i);
	}
}

/* Compare [0, upto) of p with the pattern of a block of size n at addr. */
static void check(const unsigned char *p, const void *addr, size_t n, size_t upto, const char *when)
{
	uint64_t k = key(addr), h, w;
	size_t i;

	memcpy(&h, p, 8);
	if (h != (n ^ k))
		TL_FAIL("%s: block %p (was at %p): size word %#llx, expected size %zu", when, (const void *)p, addr,
			(unsigned long long)(h ^ k), n);
	for (i = 8; i + 8 <= upto; i += 8) {
		w = word(k, i / 8);
		if (memcmp(p + i, &w, 8))
			TL_FAIL("%s: block %p (%zu bytes, was at %p) corrupted at offset %zu", when,
				(const void *)p, n, addr, i);
	}
	if (i < upto) {
		w = word(k, i / 8);
		if (memcmp(p + i, &w, upto - i))
			TL_FAIL("%s: block %p (%zu bytes) corrupted in the tail at offset %zu", when,
				(const void *)p, n, i);
	}
}

/* The size a block records; checks it against usable_size. */
static size_t size_of(const unsigned char *p)
{
	uint64_t h;

	memcpy(&h, p, 8);
	size_t n = (size_t)(h ^ key(p)), u = secretmem_usable_size(p);
	if (n < 8 || n > u)
		TL_FAIL("block %p: recorded size %zu, usable size %zu: size word overwritten", (const void *)p, n, u);
	return n;
}

static void verify_and_free(unsigned char *p, const char *when)
{
	size_t n = size_of(p);

	check(p, p, n, n, when);
	secretmem_free(p);
}

static size_t random_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;

	if (r < 800)
		return 8 + rnd(s) % 505;          /* 8..512 */
	if (r < 995)
		return 513 + rnd(s) % 15872;      /* ..16384 */
	atomic_fetch_add(&large_ops, 1);
	return 16385 + rnd(s) % 100000;           /* large runs */
}

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	uint64_t s = base_seed + 0x1234567ull * (uint64_t)(id + 1);
	unsigned char *slot[SLOTS] = { 0 };

	for (long op = 0; op < ops_per_thread; op++) {
		size_t i = rnd(&s) % SLOTS;
		unsigned char *p = slot[i];
		uint64_t r = rnd(&s) % 100;

		if (!p) {
			size_t n = random_size(&s);
			if (r < 10) {
				p = secretmem_calloc(1, n);
				TL_CHECK(p, "calloc(1, %zu): %s", n, strerror(errno));
				for (size_t j = 0; j < n; j++)
					if (p[j])
						TL_FAIL("calloc(1, %zu) = %p: byte %zu is %#x", n, (void *)p, j, p[j]);
			} else {
				p = secretmem_malloc(n);
				TL_CHECK(p, "malloc(%zu): %s", n, strerror(errno));
			}
			TL_CHECK(secretmem_usable_size(p) >= n, "usable_size %zu < %zu", secretmem_usable_size(p), n);
			fill(p, n);
			slot[i] = p;
		} else if (r < 55) {
			if (r < 8) {
				/* hand it to whichever thread looks at this exchange slot next */
				unsigned char *old = atomic_exchange(&xchg[rnd(&s) % XCHG], p);
				atomic_fetch_add(&handed_over, 1);
				if (old) {
					verify_and_free(old, "remote free");
					atomic_fetch_add(&remote_frees, 1);
				}
			} else {
				verify_and_free(p, "free");
			}
			slot[i] = NULL;
		} else if (r < 85) {
			size_t n = size_of(p), m = random_size(&s), keep = n < m ? n : m;
			check(p, p, n, n, "before realloc");
			unsigned char *q = secretmem_realloc(p, m);
			TL_CHECK(q, "realloc(%zu -> %zu): %s", n, m, strerror(errno));
			TL_CHECK(secretmem_usable_size(q) >= m, "realloc: usable_size %zu < %zu", secretmem_usable_size(q), m);
			if (keep >= 8)
				check(q, p, n, keep, "after realloc");
			fill(q, m);
			slot[i] = q;
		} else {
			size_t n = size_of(p);
			check(p, p, n, n, "check");
			TL_CHECK(secretmem_owns(p) == 1, "owns(live block) != 1");
		}
	}
	for (size_t i = 0; i < SLOTS; i++)
		if (slot[i])
			verify_and_free(slot[i], "final free");
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	struct timespec t0, t1;
	const char *seed = getenv("SECRETMEM_TEST_SEED");

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	if (tl_under_valgrind()) {
		ops_per_thread = 100000;
		printf("under valgrind: %ld operations per thread instead of 250000\n", ops_per_thread);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	base_seed = seed ? strtoull(seed, NULL, 0) : (uint64_t)t0.tv_nsec ^ (uint64_t)t0.tv_sec << 20;
	base_seed |= 1;
	printf("seed %llu (SECRETMEM_TEST_SEED repeats it)\n", (unsigned long long)base_seed);
	fflush(stdout);

	for (long i = 0; i < THREADS; i++)
		TL_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < XCHG; i++) {
		unsigned char *p = atomic_exchange(&xchg[i], NULL);
		if (p)
			verify_and_free(p, "drain");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.live_allocations == 0 && st.bytes_in_use == 0, "after the stress: %zu live blocks, %zu bytes",
		 st.live_allocations, st.bytes_in_use);
	printf("ok: %ld operations in %d threads, %ld blocks handed over, %ld freed by another thread, "
	       "%ld large, %.2f s; %zu pages faulted, %zu regions created\n",
	       ops_per_thread * THREADS, THREADS, (long)handed_over, (long)remote_frees, (long)large_ops,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, st.pages_faulted,
	       st.regions_created);
	return TL_PASS;
}
