/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * large.c - large blocks: a block above the largest run class (or aligned
 * above a page) is a secret region of its own between guard pages, the
 * block's end touching the upper one; freed ones are kept in a small cache
 * for reuse.
 *
 * sm_large_alloc is the entry for every block above SM_SMALL_MAX: a run
 * (run.c) when one fits, else a region of its own.  Lock: sm_large_lock
 * guards the cache; a block's state is changed with an atomic step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include "annotate.h"
#include "slabint.h"

#define LARGE_CACHE_MAX 8
#define LARGE_CACHE_BYTES ((size_t)16 << 20)

/* Freed large blocks (own regions) kept for reuse, newest first; the
 * oldest go when there are more than LARGE_CACHE_MAX or LARGE_CACHE_BYTES. */
pthread_mutex_t sm_large_lock = PTHREAD_MUTEX_INITIALIZER;
static struct large *large_cache;
static size_t large_cached_n, large_cached_bytes;

/* The block's start in region r: its end as close to the upper guard page
 * as alignment allows; 0 if r is too small. */
static unsigned char *large_place(const struct region *r, size_t use, size_t align)
{
	if (r->size < use)
		return NULL;
	uintptr_t p = ((uintptr_t)r->data + r->size - use) & ~((uintptr_t)align - 1);
	return p >= (uintptr_t)r->data ? (unsigned char *)p : NULL;
}

static void large_destroy_list(struct large *l)
{
	while (l) {
		struct large *next = l->next;
		sm_end_region(&l->reg);
		sm_meta_free(l, sizeof(*l));
		l = next;
	}
}

/* Take every cached large block off the cache (to destroy outside the lock). */
static struct large *large_cache_take_all(void)
{
	pthread_mutex_lock(&sm_large_lock);
	struct large *l = large_cache;
	large_cache = NULL;
	large_cached_n = 0;
	large_cached_bytes = 0;
	pthread_mutex_unlock(&sm_large_lock);
	return l;
}

/* l's region of bytes, every page ready (lazy: left to its first touch). */
static int make_ready(struct large *l, size_t bytes)
{
	int rc = sm_new_region(&l->reg, bytes, REGION_LAZY, &l->own);

	if (!rc && (rc = sm_region_ready(&l->reg, bytes)) != 0)
		sm_end_region(&l->reg);
	return rc;
}

/* A new mapped large block of bytes in *out. */
static int new_large(size_t bytes, struct large **out)
{
	struct large *l = sm_meta_alloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->own.kind = OWNER_LARGE;
	int rc = make_ready(l, bytes);
	struct large *kept;
	if (rc == -ENOMEM && (kept = large_cache_take_all()) != NULL) {
		/* the kept blocks hold memory-lock budget: give it back */
		large_destroy_list(kept);
		rc = make_ready(l, bytes);
	}
	if (rc)
		sm_meta_free(l, sizeof(*l));
	else
		*out = l;
	return rc;
}

/* Cancellation is off only where a mapping is made (sm_run_alloc, new_large):
 * a kept block is reused with no system call, so no cancellation point. */
int sm_large_alloc(size_t size, size_t align, void **out, size_t *usable)
{
	if (size > SIZE_MAX / 4 || align > SIZE_MAX / 4)
		return -ENOMEM;
	if (align < 16)
		align = 16;
	size_t use = (size + 15) & ~(size_t)15;
	if (align <= sm_page_size) {
		int rc = sm_run_alloc(use, align, out, usable);
		if (rc != -ENOSPC)
			return rc;
	}
	size_t bytes = (use + sm_page_size - 1) & ~(sm_page_size - 1);
	/* room to slide the block down to an alignment above a page */
	if (align > sm_page_size)
		bytes += align - sm_page_size;
	struct large *l = NULL;

	pthread_mutex_lock(&sm_large_lock);
	/* best fit: the smallest cached block that fits and wastes at most a
	 * quarter */
	struct large **best = NULL;
	/* SECRETMEM_REQUIRE set after fallback memory was used: not a block of
	 * that memory either */
	int secret_only = atomic_load_explicit(&sm_fallback_regions, memory_order_relaxed) &&
			  sm_option(SECRETMEM_OPT_REQUIRE);
	for (struct large **pp = &large_cache; *pp; pp = &(*pp)->next) {
		size_t have = (*pp)->reg.size;
		if (secret_only && (*pp)->reg.backend != SECRETMEM_BACKEND_SECRET)
			continue;
		if (have >= bytes && have - bytes <= bytes / 4 && (!best || have < (*best)->reg.size) &&
		    large_place(&(*pp)->reg, use, align))
			best = pp;
	}
	if (best) {
		l = *best;
		*best = l->next;
		large_cached_n--;
		large_cached_bytes -= l->reg.size;
	}
	pthread_mutex_unlock(&sm_large_lock);
	if (l) {
		unsigned char *at = large_place(&l->reg, use, align), *end = l->reg.data + l->reg.size;
		SM_SHOW(at, (size_t)(end - at));
		if (!sm_sample_ready(&l->reg, at, (size_t)(end - at)))
			sm_fatal("freed block was modified (write after free)");
	} else {
		/* cancellation off: a cancelled creation would leave its
		 * secret mapping behind, unreachable */
		int old = sm_cancel_off(), rc = new_large(bytes, &l);
		sm_cancel_restore(old);
		if (rc)
			return rc;
	}
	l->usable = use;
	l->ptr = large_place(&l->reg, use, align); /* its end at the guard, if align allows */
	SM_HIDE(l->reg.data, l->reg.size);
	SM_UNPOISON(l->ptr, use);
	__atomic_store_n(&l->state, SLOT_LIVE, __ATOMIC_RELEASE);
	atomic_fetch_add(&sm_ctr.large_live, 1);
	atomic_fetch_add(&sm_ctr.large_bytes, use);
	*out = l->ptr;
	*usable = use;
	return 0;
}

void sm_large_free(struct large *l)
{
	int expected = SLOT_LIVE;

	if (!__atomic_compare_exchange_n(&l->state, &expected, SLOT_CACHED, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		sm_fatal("double free");
	atomic_fetch_sub(&sm_ctr.large_live, 1);
	atomic_fetch_sub(&sm_ctr.large_bytes, l->usable);
	/* the whole region: the slack before the block too */
	SM_SHOW(l->reg.data, l->reg.size);
	sm_zero_ready(&l->reg, l->reg.data, l->reg.size);
	SM_HIDE(l->reg.data, l->reg.size);
	struct large *gone = NULL;
	pthread_mutex_lock(&sm_large_lock);
	if (l->reg.size <= LARGE_CACHE_BYTES) {
		l->next = large_cache;
		large_cache = l;
		large_cached_n++;
		large_cached_bytes += l->reg.size;
		/* evict the oldest beyond the limits */
		while (large_cached_n > LARGE_CACHE_MAX || large_cached_bytes > LARGE_CACHE_BYTES) {
			struct large **pp = &large_cache;
			while ((*pp)->next)
				pp = &(*pp)->next;
			struct large *old = *pp;
			*pp = NULL;
			large_cached_n--;
			large_cached_bytes -= old->reg.size;
			old->next = gone;
			gone = old;
		}
	} else {
		l->next = NULL;
		gone = l;
	}
	pthread_mutex_unlock(&sm_large_lock);
	large_destroy_list(gone);
}

/* Every cached block back to the system; the bytes they had faulted in. */
size_t sm_large_release_cached(void)
{
	size_t freed = 0;

	for (struct large *l = large_cache_take_all(), *next; l; l = next) {
		next = l->next;
		l->next = NULL;
		freed += l->reg.faulted;
		large_destroy_list(l);
	}
	return freed;
}

/* In a fork child, every lock held: the cached blocks, taken off the cache
 * (their pages were not copied, or were dropped). */
struct large *sm_large_cache_detach(void)
{
	struct large *l = large_cache;

	large_cache = NULL;
	large_cached_n = large_cached_bytes = 0;
	return l;
}
