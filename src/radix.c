/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * radix.c - the radix map from 2 MiB granule to owner (a chunk or a large
 * block), and the lookup of any pointer through it.
 *
 * Readers (free's fast path in slab.h, sm_lookup, sm_in_our_memory) take no
 * lock: entries are published with release stores.  Writers take
 * sm_radix_lock; every removal bumps sm_radix_gen, which tells the thread
 * caches' records of a chunk (alloc.c) that they may be stale.
 */
#define _GNU_SOURCE
#include <errno.h>
#include "slabint.h"

struct owner *_Atomic *_Atomic sm_radix[SM_RADIX_L1_SIZE];
atomic_ulong sm_radix_gen;
pthread_mutex_t sm_radix_lock = PTHREAD_MUTEX_INITIALIZER;

struct owner *sm_radix_get(uintptr_t a)
{
	if (a >> SM_ADDR_BITS)
		return NULL;
	size_t g = a >> SM_GRANULE_SHIFT;
	struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[g >> SM_RADIX_L2_BITS], memory_order_acquire);
	if (!leaf)
		return NULL;
	return atomic_load_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], memory_order_acquire);
}

/* Point every granule of [start, start+len) at o (NULL to clear). */
int sm_radix_set(uintptr_t start, size_t len, struct owner *o)
{
	int rc = 0;

	if ((start + len - 1) >> SM_ADDR_BITS)
		return -ENOMEM; /* beyond the 47-bit user space we index */
	pthread_mutex_lock(&sm_radix_lock);
	for (uintptr_t a = start; a < start + len; a += SM_GRANULE) {
		size_t g = a >> SM_GRANULE_SHIFT;
		struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[g >> SM_RADIX_L2_BITS], memory_order_relaxed);
		if (!leaf) {
			void *mem;
			if (!o)
				continue;
			rc = os_map_anon(SM_RADIX_L2_SIZE * sizeof(*leaf), &mem);
			if (rc)
				break;
			leaf = mem;
			atomic_store_explicit(&sm_radix[g >> SM_RADIX_L2_BITS], leaf, memory_order_release);
		}
		atomic_store_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], o, memory_order_release);
	}
	if (!o) /* an owner left: every thread's record of a chunk is stale */
		atomic_fetch_add_explicit(&sm_radix_gen, 1, memory_order_release);
	pthread_mutex_unlock(&sm_radix_lock);
	return rc;
}

void sm_radix_clear_all(void)
{
	for (size_t i = 0; i < SM_RADIX_L1_SIZE; i++) {
		struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[i], memory_order_relaxed);
		if (leaf)
			for (size_t j = 0; j < SM_RADIX_L2_SIZE; j++)
				atomic_store_explicit(&leaf[j], NULL, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&sm_radix_gen, 1, memory_order_release);
}

/* ---- lookup -------------------------------------------------------------- */

int sm_lookup(const void *p, struct blockref *ref)
{
	uintptr_t a = (uintptr_t)p;
	struct owner *o = sm_radix_get(a);

	ref->slab = NULL;
	ref->large = NULL;
	if (!o)
		return LOOKUP_FOREIGN;
	if (o->kind == OWNER_LARGE) {
		struct large *l = (struct large *)o;
		if (a < (uintptr_t)l->reg.data || a >= (uintptr_t)l->reg.data + l->reg.size)
			return LOOKUP_FOREIGN;
		if (a != (uintptr_t)l->ptr)
			return LOOKUP_INTERIOR;
		ref->large = l;
		ref->usable = l->usable;
		return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == SLOT_LIVE ? LOOKUP_OK : LOOKUP_NOT_LIVE;
	}
	struct chunk *c = (struct chunk *)o;
	if (a < (uintptr_t)c->reg.data)
		return LOOKUP_FOREIGN;
	size_t pg = (a - (uintptr_t)c->reg.data) >> sm_page_shift;
	if (pg >= c->npages)
		return LOOKUP_FOREIGN;
	struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_acquire);
	if (!s)
		return LOOKUP_FOREIGN;
	uint64_t off = a - (uintptr_t)s->start;
	unsigned i = (unsigned)((off * s->inv) >> 40);
	if ((uint64_t)i * s->size != off || i >= s->nslots)
		return LOOKUP_INTERIOR;
	ref->slab = s;
	ref->idx = i;
	ref->usable = s->size;
	uint8_t st = atomic_load_explicit((_Atomic uint8_t *)&s->state[i], memory_order_relaxed);
	return st == SLOT_LIVE ? LOOKUP_OK : LOOKUP_NOT_LIVE;
}

int sm_radix_any(uintptr_t lo, uintptr_t hi)
{
	uintptr_t top = (uintptr_t)1 << SM_ADDR_BITS;

	for (uintptr_t a = lo & ~(SM_GRANULE - 1); a < hi && a < top;) {
		size_t g = a >> SM_GRANULE_SHIFT;
		struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[g >> SM_RADIX_L2_BITS], memory_order_acquire);
		if (!leaf) { /* a whole leaf's span is nobody's */
			a = (uintptr_t)((g | (SM_RADIX_L2_SIZE - 1)) + 1) << SM_GRANULE_SHIFT;
			continue;
		}
		if (atomic_load_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], memory_order_acquire))
			return 1;
		a += SM_GRANULE;
	}
	return 0;
}

/* Whether p lies in memory of ours (a chunk's pages, a large block's
 * region), whatever is there now: a live block, a freed one, or pages a
 * trim or an eviction gave back to the chunk.  Such an address is never
 * another allocator's. */
int sm_in_our_memory(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct owner *o = sm_radix_get(a);

	if (!o)
		return 0;
	if (o->kind == OWNER_LARGE) {
		const struct large *l = (const struct large *)o;
		return a >= (uintptr_t)l->reg.data && a < (uintptr_t)l->reg.data + l->reg.size;
	}
	const struct chunk *c = (const struct chunk *)o;
	return a >= (uintptr_t)c->reg.data && a - (uintptr_t)c->reg.data < ((size_t)c->npages << sm_page_shift);
}
