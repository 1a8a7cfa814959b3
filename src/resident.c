/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * resident.c - which pages of a lazy region hold memory, and the work that
 * keeps to them.
 *
 * In a lazy region (region.c: the mmap-time regime) a page the program has
 * not touched holds no memory and reads as zero; touching it, even to read,
 * costs a first touch of a secret page.  So the zeroing of a freed run or
 * large block, the write-after-free sample of one handed out again, the
 * tail a shrinking realloc gives up and a moving realloc's copy keep to the
 * pages that hold memory, which the kernel tells (mincore, through the OS
 * layer's os_each_resident).  A chunk remembers the pages it found so
 * (chunk->resmap; atomic bits, set here, never cleared while the chunk
 * lives; in a fork child, whose copy left pages out, it is learnt anew
 * from the kernel in one pass, sm_chunk_learn), so that steady churn stops
 * asking.  A wrong "holds memory" costs a fault,
 * never a page left unzeroed; a page mincore cannot answer for counts as
 * holding memory.  Outside lazy regions every function here is the plain
 * sm_zero / sm_sample_zero / sm_copy.
 */
#define _GNU_SOURCE
#include <string.h>
#include "slabint.h"

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

/* The pages of [p, p+n) of c hold memory: say so in resmap. */
static void mark(struct chunk *c, const unsigned char *p, size_t n)
{
	size_t first, end;

	page_span(c, p, n, &first, &end);
	for (size_t i = first; i < end; i++)
		__atomic_fetch_or(&c->resmap[i / 64], (uint64_t)1 << (i % 64), __ATOMIC_RELAXED);
}

/* os_each_resident's pieces: zeroed (zero) or sampled, and marked in the
 * chunk's resmap (c; NULL for a large block, which has none). */
struct walk {
	struct chunk *c;
	int zero, ok;
};

static void walk_piece(void *arg, unsigned char *p, size_t n)
{
	struct walk *w = arg;

	if (w->zero)
		sm_zero(p, n);
	else if (w->ok && !sm_sample_zero(p, n))
		w->ok = 0;
	if (w->c)
		mark(w->c, p, n);
}

/* Zero (zero) or sample [p, p+len) of region r, keeping to the pages that
 * hold memory when r is lazy and c's resmap (if c) does not already know
 * them all; 1, or 0 when a sample was not zero. */
static int walk(const struct region *r, struct chunk *c, void *p, size_t len, int zero)
{
	size_t first, end;

	if (c)
		page_span(c, p, len, &first, &end);
	if (!r->lazy || (c && known_resident(c, first, end))) {
		if (!zero)
			return sm_sample_zero(p, len);
		sm_zero(p, len);
		return 1;
	}
	struct walk w = { c, zero, 1 };
	os_each_resident(p, len, walk_piece, &w);
	return w.ok;
}

int sm_sample_ready(const struct region *r, const void *block, size_t len)
{
	return walk(r, NULL, (void *)(uintptr_t)block, len, 0);
}

void sm_zero_ready(const struct region *r, void *p, size_t len)
{
	walk(r, NULL, p, len, 1);
}

static void learn_piece(void *arg, unsigned char *p, size_t n)
{
	mark(arg, p, n);
}

void sm_chunk_learn(struct chunk *c)
{
	memset(c->resmap, 0, sizeof(c->resmap));
	if (c->reg.lazy && c->reg.faulted)
		os_each_resident(c->reg.data, c->reg.faulted, learn_piece, c);
}

void sm_chunk_zero_known(struct chunk *c, void *p, size_t len)
{
	unsigned char *a = p, *e = a + len;
	size_t first, end;

	if (!c->reg.lazy) {
		sm_zero(p, len);
		return;
	}
	page_span(c, p, len, &first, &end);
	for (size_t i = first; i < end; i++) {
		if (!((c->resmap[i / 64] >> (i % 64)) & 1))
			continue;
		unsigned char *lo = c->reg.data + (i << sm_page_shift), *hi = lo + sm_page_size;
		if (lo < a)
			lo = a;
		if (hi > e)
			hi = e;
		sm_zero(lo, (size_t)(hi - lo));
	}
}

void sm_chunk_zero(struct chunk *c, void *p, size_t len)
{
	walk(&c->reg, c, p, len, 1);
}

int sm_chunk_sample(struct chunk *c, const void *p, size_t len)
{
	return walk(&c->reg, c, (void *)(uintptr_t)p, len, 0);
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
