/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * owned_slabs.c - a measurement, not part of the library: how fast could
 * the small-block paths be if each thread owned its slabs and a slab's free
 * bitmap were the thread's cache (issue 32, target 5)?  One thread, 16
 * classes of 16-512 B in 16 KiB slabs of one 64 MiB anonymous chunk,
 * out-of-line slab records found from the chunk's offset; it keeps zero on
 * free, the zero check at hand-out (all of a block up to 64 B, its first
 * and last 64 B above) and the double-free verdict of the owner's frees.
 * It has no remote frees, statistics, fork handling, fallback or limits,
 * so it bounds what such a design could reach from below.  Timed with
 * make bench's own pair, batch and random 16-512 B loops (bench/loops.h),
 * against glibc+bzero and mimalloc+bzero, the three in turn each round;
 * per round the ratio of thread CPU time, printed as median [min-max]
 * (bench/RESULTS.md, "Thread-owned slabs, measured before a rewrite").
 *
 *   gcc -O2 -mavx2 -Iinclude -o owned_slabs bench/experiments/owned_slabs.c -ldl -lm
 *   ./owned_slabs 21                  21 interleaved rounds
 *   K1=20000 ./owned_slabs 1 W A      one workload W (0 pair, 1 batch,
 *                                     2 random), one allocator A (p, m, g),
 *                                     for callgrind
 *   -DNOCHECK                         without the zero check at hand-out
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NCLS 16
#define SLAB (16384u)
#define CHUNK (64u << 20)
static const uint32_t csize[NCLS] = { 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512 };
static uint8_t cls_of[33]; /* (n+15)>>4 -> class */

struct pslab {
	uint64_t free[SLAB / 16 / 64]; /* 1 = free (and all zero) */
	unsigned char *start;
	uint32_t size; uint64_t inv;
	uint16_t word, nwords;
	void *owner;
	struct pslab *next;
};
struct ptc {
	struct pslab *cur[NCLS];
	struct pslab *full[NCLS];
	uintptr_t lo;
	size_t len;
	struct pslab **meta;
};
static unsigned char *chunk;
static struct pslab **meta; /* per slab of the chunk */
static size_t used;
static __thread struct ptc *tls_tc __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, noreturn)) void fatal(const char *m)
{
	fprintf(stderr, "fatal: %s\n", m);
	abort();
}

static struct pslab *new_slab(struct ptc *tc, unsigned c)
{
	struct pslab *s = calloc(1, sizeof(*s));
	s->start = chunk + used;
	meta[used / SLAB] = s;
	used += SLAB;
	s->size = csize[c];
	s->inv = (uint64_t)(((1ull << 40) + s->size - 1) / s->size);
	unsigned n = SLAB / s->size;
	for (unsigned i = 0; i < n; i++)
		s->free[i >> 6] |= 1ull << (i & 63);
	s->nwords = (uint16_t)((n + 63) / 64);
	s->owner = tc;
	return s;
}

static struct ptc *tc_get(void)
{
	if (!chunk) {
		chunk = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		meta = calloc(CHUNK / SLAB, sizeof(*meta));
		for (unsigned n = 0; n <= 32; n++) {
			unsigned c = 0;
			while (csize[c] < n * 16u)
				c++;
			cls_of[n] = (uint8_t)c;
		}
	}
	struct ptc *tc = calloc(1, sizeof(*tc));
	tc->lo = (uintptr_t)chunk;
	tc->len = CHUNK;
	tc->meta = meta;
	for (unsigned c = 0; c < NCLS; c++)
		tc->cur[c] = new_slab(tc, c);
	tls_tc = tc;
	return tc;
}

static inline int zero64(const unsigned char *p, uint32_t n)
{
	uint64_t a, b, x = 0;
	for (uint32_t i = 0; i < n; i += 16) {
		memcpy(&a, p + i, 8);
		memcpy(&b, p + i + 8, 8);
		x |= a | b;
	}
	return x == 0;
}

#include <immintrin.h>
typedef uint64_t vec __attribute__((vector_size(32), may_alias, aligned(1)));
static inline __attribute__((always_inline)) int small_zero(const unsigned char *p, uint32_t n)
{
	/* 16..64 in 16s: two overlapping 16-byte pairs or 32-byte pairs */
	typedef uint64_t v16 __attribute__((vector_size(16), may_alias, aligned(1)));
	if (n <= 32) {
		v16 a = *(const v16 *)p | *(const v16 *)(p + n - 16);
		return (a[0] | a[1]) == 0;
	}
	vec a = *(const vec *)p | *(const vec *)(p + n - 32);
	__m256i x = (__m256i)a;
	return _mm256_testz_si256(x, x);
}
static inline __attribute__((always_inline)) void small_clear(unsigned char *p, uint32_t n)
{
	typedef uint64_t v16 __attribute__((vector_size(16), may_alias, aligned(1)));
	if (n <= 32) {
		*(v16 *)p = (v16){0, 0};
		*(v16 *)(p + n - 16) = (v16){0, 0};
	} else {
		*(vec *)p = (vec){0, 0, 0, 0};
		*(vec *)(p + n - 32) = (vec){0, 0, 0, 0};
	}
	__asm__ volatile("" ::"r"(p) : "memory");
}
__attribute__((target("avx2"))) static int sample_zero(const unsigned char *p, uint32_t n)
{
	vec a = *(const vec *)p | *(const vec *)(p + 32) | *(const vec *)(p + n - 64) | *(const vec *)(p + n - 32);
	__m256i x = (__m256i)a;
	return _mm256_testz_si256(x, x);
}
__attribute__((target("avx2"), noinline)) static void big_clear(unsigned char *p, uint32_t n)
{
	const vec z = { 0, 0, 0, 0 };
	if (n > 128) {
		for (uint32_t i = 0; i + 128 < n; i += 128) {
			*(vec *)(p + i) = z;
			*(vec *)(p + i + 32) = z;
			*(vec *)(p + i + 64) = z;
			*(vec *)(p + i + 96) = z;
		}
		*(vec *)(p + n - 128) = z;
		*(vec *)(p + n - 96) = z;
	} else {
		*(vec *)p = z;
		*(vec *)(p + 32) = z;
	}
	*(vec *)(p + n - 64) = z;
	*(vec *)(p + n - 32) = z;
	__asm__ volatile("" ::"r"(p) : "memory");
}

static __attribute__((noinline)) void *malloc_slow(size_t n)
{
	struct ptc *tc = tls_tc;
	if (!tc)
		tc = tc_get();
	if (n > 512 || n == 0)
		return n ? NULL : malloc_slow(1);
	unsigned c = cls_of[(n + 15) >> 4];
	struct pslab *s = tc->cur[c];
	for (;;) {
		for (unsigned w = 0; w < s->nwords; w++)
			if (s->free[w]) {
				s->word = (uint16_t)w;
				goto found;
			}
		/* full: park it, take another with room or a new one */
		s->next = tc->full[c];
		tc->full[c] = s;
		struct pslab **pp = &tc->full[c]->next, *t;
		s = NULL;
		for (; (t = *pp); pp = &t->next) {
			for (unsigned w = 0; w < t->nwords; w++)
				if (t->free[w]) {
					*pp = t->next;
					s = t;
					break;
				}
			if (s)
				break;
		}
		if (!s)
			s = new_slab(tc, c);
		tc->cur[c] = s;
	}
found:;
	uint64_t bits = s->free[s->word];
	unsigned i = (unsigned)__builtin_ctzll(bits);
	s->free[s->word] = bits & (bits - 1);
	unsigned char *p = s->start + (size_t)(s->word * 64u + i) * s->size;
	if (!(s->size <= 64 ? zero64(p, s->size) : sample_zero(p, s->size)))
		fatal("write after free");
	return p;
}

static void *pmalloc(size_t n)
{
	struct ptc *tc = tls_tc;
	if (UNLIKELY(!tc || n - 1 >= 512))
		return malloc_slow(n);
	struct pslab *s = tc->cur[cls_of[(n + 15) >> 4]];
	unsigned w = s->word;
	uint64_t bits = s->free[w];
	if (UNLIKELY(!bits))
		return malloc_slow(n);
	unsigned i = (unsigned)__builtin_ctzll(bits);
	s->free[w] = bits & (bits - 1);
	uint32_t sz = s->size;
	unsigned char *p = s->start + (size_t)(w * 64u + i) * sz;
#ifdef NOCHECK
	if (0) {
#else
	if (sz <= 64) {
#endif
		if (UNLIKELY(!small_zero(p, sz)))
			fatal("write after free");
	}
#ifndef NOCHECK
	else if (UNLIKELY(!sample_zero(p, sz)))
		fatal("write after free");
#endif
	return p;
}

static __attribute__((noinline)) void free_slow(void *p)
{
	(void)p;
	fatal("slow free (not in prototype)");
}

static void pfree(void *p)
{
	struct ptc *tc = tls_tc;
	uintptr_t a = (uintptr_t)p;
	if (UNLIKELY(!tc || a - tc->lo >= tc->len)) {
		if (p)
			free_slow(p);
		return;
	}
	struct pslab *s = tc->meta[(a - tc->lo) / SLAB];
	uintptr_t off = a - (uintptr_t)s->start;
	uint32_t sz = s->size;
	unsigned idx = (unsigned)((off * s->inv) >> 40);
	if (UNLIKELY((uintptr_t)idx * sz != off || s->owner != tc)) {
		free_slow(p);
		return;
	}
	unsigned w = idx >> 6;
	uint64_t bit = 1ull << (idx & 63), bits = s->free[w];
	if (UNLIKELY(bits & bit))
		fatal("double free");
	if (sz <= 64)
		small_clear(p, sz);
	else
		big_clear(p, sz);
	s->free[w] = bits | bit;
	if (w < s->word)
		s->word = (uint16_t)w;
}

/* ---- the bench's loops (bench/loops.h), with what they need of it ---- */

#include "../bench.h"
#include "../loops.h"

volatile uintptr_t sink;
const char *cur_name = "";
double last_cpu, last_faults, last_maps;
uint32_t rnd_size[RND_N], rnd_slot[RND_N], big_size[RND_N];
static double cpu0;

static double thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

void timer_start(void)
{
	cpu0 = thread_cpu_ns();
}

double timer_stop(void)
{
	last_cpu = thread_cpu_ns() - cpu0;
	return last_cpu;
}

void oom(const char *who)
{
	fprintf(stderr, "owned_slabs: %s: allocation failed\n", who);
	exit(2);
}

static void *(*mi_malloc_p)(size_t);
static void (*mi_free_p)(void *);
static void *a_glibc(size_t n) { return malloc(n); }
static void r_glibc(void *p, size_t n) { explicit_bzero(p, n); free(p); }
static void *a_mi(size_t n) { return mi_malloc_p(n); }
static void r_mi(void *p, size_t n) { explicit_bzero(p, n); mi_free_p(p); }
static void *a_pr(size_t n) { return pmalloc(n); }
static void r_pr(void *p, size_t n) { (void)n; pfree(p); }

/* Workload w (0 pair, 1 batch, 2 random) k times: CPU ns per operation
 * (per block for the batch). */
#define DEF(N, A, R)                                                                  \
	static __attribute__((noinline)) double w_##N(int w, long k)                   \
	{                                                                             \
		if (w == 0)                                                           \
			loop_pairs(A, R, k);                                          \
		else if (w == 1)                                                      \
			loop_batch(A, R, k);                                          \
		else                                                                  \
			loop_random(A, R, k, rnd_size, LIVE);                         \
		return last_cpu / (double)(w == 1 ? k * BATCH : k);                   \
	}
DEF(glibc, a_glibc, r_glibc)
DEF(mi, a_mi, r_mi)
DEF(pr, a_pr, r_pr)

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 21;
	void *h = dlopen("libmimalloc.so.2", RTLD_NOW);

	if (rounds < 1 || rounds > 64 || !h)
		return fprintf(stderr, "usage: owned_slabs [ROUNDS (1-64)] [W A]; needs libmimalloc.so.2\n"), 2;
	*(void **)&mi_malloc_p = dlsym(h, "mi_malloc");
	*(void **)&mi_free_p = dlsym(h, "mi_free");
	random_tables(); /* bench's tables */
	if (argc > 3) { /* one workload, one allocator: for callgrind */
		long k1 = getenv("K1") ? atol(getenv("K1")) : 20000;
		int w = atoi(argv[2]);
		double t = argv[3][0] == 'p' ? w_pr(w, k1) : argv[3][0] == 'm' ? w_mi(w, k1) : w_glibc(w, k1);
		printf("%.2f\n", t);
		return 0;
	}
	const long K[3] = { 2000000, 2000, 2000000 };
	const char *name[3] = { "pair", "batch", "random" };
	for (int w = 0; w < 3; w++) {
		double rg[64], rm[64], tp[64], tm[64], tg[64];
		w_pr(w, K[w] / 10);
		w_mi(w, K[w] / 10);
		w_glibc(w, K[w] / 10);
		for (int r = 0; r < rounds; r++) {
			double g = w_glibc(w, K[w]), m = w_mi(w, K[w]), p = w_pr(w, K[w]);
			rg[r] = p / g;
			rm[r] = p / m;
			tp[r] = p;
			tm[r] = m;
			tg[r] = g;
		}
		qsort(rg, (size_t)rounds, sizeof(double), cmpd);
		qsort(rm, (size_t)rounds, sizeof(double), cmpd);
		qsort(tp, (size_t)rounds, sizeof(double), cmpd);
		qsort(tm, (size_t)rounds, sizeof(double), cmpd);
		qsort(tg, (size_t)rounds, sizeof(double), cmpd);
		printf("%-6s owned %.2f ns, mimalloc %.2f, glibc %.2f | x glibc+bzero %.2f [%.2f-%.2f]  "
		       "x mimalloc+bzero %.2f [%.2f-%.2f]\n",
		       name[w], tp[rounds / 2], tm[rounds / 2], tg[rounds / 2], rg[rounds / 2], rg[0], rg[rounds - 1],
		       rm[rounds / 2], rm[0], rm[rounds - 1]);
	}
	return 0;
}
