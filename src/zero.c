/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * zero.c - zeroing freed memory, and the write-after-free checks.
 *
 * Owns: sm_zero (a memset the compiler may not drop), sm_is_zero (whether a
 * freed slot or sample is still all zero, with AVX2 where the CPU has it)
 * and sm_sample_zero (the sampled check of a reused run or large block);
 * in a lazy region (region.c: pages fault at their first touch), zeroing
 * and sampling of a run or large block keep to the pages that hold memory
 * (sm_zero_ready, sm_sample_ready; for runs sm_chunk_zero and
 * sm_chunk_sample, which remember in the chunk's resmap the pages found to
 * hold memory, so that steady churn asks the kernel no more), and a free or
 * a reuse faults in no page the program left untouched.
 * No state but the CPU feature flag, set once by sm_zero_init.
 */
#define _GNU_SOURCE
#include <string.h>
#include "slabint.h"

void sm_zero(void *p, size_t len)
{
	memset(p, 0, len);
	__asm__ __volatile__("" : : "r"(p) : "memory"); /* not a dead store */
}

/*
 * The write-after-free check: whether len bytes at p, a freed slot or a
 * sample of a freed run about to be handed out again, are all zero.  It
 * reads only memory the allocator zeroed (a non-zero byte is fatal), never
 * a live secret, so vector registers are fine here, unlike in nosimd.c's
 * copies: 32 bytes per load, two accumulators, with AVX2 where the CPU has
 * it (the 16 KiB class is checked four times faster than with 8-byte words).
 */
typedef uint64_t sm_vec __attribute__((vector_size(32), may_alias, aligned(1)));

static inline __attribute__((always_inline)) int is_zero_body(const unsigned char *p, size_t len)
{
	sm_vec a = { 0, 0, 0, 0 }, b = { 0, 0, 0, 0 };
	size_t i = 0;

	if (len < 32) {
		uint64_t w = 0;
		for (; i + 8 <= len; i += 8)
			w |= *(const sm_word *)(const void *)(p + i);
		for (; i < len; i++)
			w |= p[i];
		return w == 0;
	}
	for (; i + 64 <= len; i += 64) {
		a |= *(const sm_vec *)(const void *)(p + i);
		b |= *(const sm_vec *)(const void *)(p + i + 32);
	}
	if (i + 32 <= len)
		a |= *(const sm_vec *)(const void *)(p + i);
	/* the last 32 bytes, overlapping what was read */
	b |= *(const sm_vec *)(const void *)(p + len - 32);
	a |= b;
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

static int is_zero_generic(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static int have_avx2;

__attribute__((target("avx2"))) static int is_zero_avx2(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

void sm_zero_init(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2") != 0;
}

int sm_is_zero(const void *p, size_t len)
{
	return have_avx2 ? is_zero_avx2(p, len) : is_zero_generic(p, len);
}
#else
void sm_zero_init(void)
{
}

int sm_is_zero(const void *p, size_t len)
{
	return is_zero_generic(p, len);
}
#endif

#define SAMPLE 64 /* bytes checked at each sampled place */

/* A cheap write-after-free check of a reused block (a run's, a kept
 * region's, a small slot above SM_CHECK_FULL_MAX): SAMPLE bytes at its start,
 * at its end, and at the start of each page that begins inside it. */
int sm_sample_zero(const void *block, size_t len)
{
	const unsigned char *p = block;
	size_t k = len < SAMPLE ? len : SAMPLE;

	if (!sm_is_zero(p, k) || !sm_is_zero(p + len - k, k))
		return 0;
	uintptr_t pg = ((uintptr_t)p + sm_page_size - 1) & ~(uintptr_t)(sm_page_size - 1);
	for (; pg + SAMPLE <= (uintptr_t)p + len; pg += sm_page_size)
		if (!sm_is_zero((const void *)pg, SAMPLE))
			return 0;
	return 1;
}

static void sample_piece(void *arg, unsigned char *p, size_t n)
{
	int *ok = arg;

	if (*ok && !sm_sample_zero(p, n))
		*ok = 0;
}

int sm_sample_ready(const struct region *r, const void *block, size_t len)
{
	int ok = 1;

	if (!r->lazy)
		return sm_sample_zero(block, len);
	/* a page that holds no memory reads as zero: nothing to check, and
	 * reading it would fault it in */
	os_each_resident((void *)(uintptr_t)block, len, sample_piece, &ok);
	return ok;
}

int sm_zero_ready(const struct region *r, void *p, size_t len)
{
	if (!r->lazy) {
		sm_zero(p, len);
		return 1;
	}
	return region_zero(r, p, len);
}

void sm_zero_tail(const struct blockref *ref, void *p, size_t len)
{
	if (ref->large)
		sm_zero_ready(&ref->large->reg, p, len);
	else if (sm_is_run(ref->slab))
		sm_chunk_zero(ref->slab->chunk, p, len);
	else
		sm_zero(p, len);
}

/* The pages of [p, p+len) in chunk c: first and end index. */
static void page_span(const struct chunk *c, const void *p, size_t len, size_t *first, size_t *end)
{
	uintptr_t base = (uintptr_t)c->reg.data;

	*first = ((uintptr_t)p - base) >> sm_page_shift;
	*end = ((uintptr_t)p + len - base + sm_page_size - 1) >> sm_page_shift;
}

static int known_resident(const struct chunk *c, size_t first, size_t end)
{
	for (size_t i = first; i < end; i++)
		if (!((__atomic_load_n(&c->resmap[i / 64], __ATOMIC_RELAXED) >> (i % 64)) & 1))
			return 0;
	return 1;
}

/* os_each_resident's pieces: zeroed (zero) or sampled, and marked. */
struct chunk_walk {
	struct chunk *c;
	int zero, ok;
};

static void chunk_piece(void *arg, unsigned char *p, size_t n)
{
	struct chunk_walk *w = arg;
	size_t first, end;

	if (w->zero)
		sm_zero(p, n);
	else if (w->ok && !sm_sample_zero(p, n))
		w->ok = 0;
	page_span(w->c, p, n, &first, &end);
	for (size_t i = first; i < end; i++)
		__atomic_fetch_or(&w->c->resmap[i / 64], (uint64_t)1 << (i % 64), __ATOMIC_RELAXED);
}

void sm_chunk_zero(struct chunk *c, void *p, size_t len)
{
	size_t first, end;

	page_span(c, p, len, &first, &end);
	if (!c->reg.lazy || known_resident(c, first, end)) {
		sm_zero(p, len);
		return;
	}
	struct chunk_walk w = { c, 1, 1 };
	os_each_resident(p, len, chunk_piece, &w);
}

int sm_chunk_sample(struct chunk *c, const void *p, size_t len)
{
	size_t first, end;

	page_span(c, p, len, &first, &end);
	if (!c->reg.lazy || known_resident(c, first, end))
		return sm_sample_zero(p, len);
	struct chunk_walk w = { c, 0, 1 };
	os_each_resident((void *)(uintptr_t)p, len, chunk_piece, &w);
	return w.ok;
}

struct copy_walk {
	unsigned char *dst;
	const unsigned char *src;
};

static void copy_piece(void *arg, unsigned char *p, size_t n)
{
	struct copy_walk *w = arg;

	sm_copy(w->dst + (p - w->src), p, n);
}

void sm_copy_ready(const struct blockref *ref, void *dst, const void *src, size_t len)
{
	const struct region *r = ref->large ? &ref->large->reg
				 : ref->slab && sm_is_run(ref->slab) ? &ref->slab->chunk->reg : NULL;

	if (!r || !r->lazy) {
		sm_copy(dst, src, len);
		return;
	}
	struct copy_walk w = { dst, src };
	os_each_resident((void *)(uintptr_t)src, len, copy_piece, &w);
}
