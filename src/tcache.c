/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * tcache.c - the life of thread caches: the allocator's start-up, a
 * thread's cache made at its first call and retired at its exit (its slots
 * back to their slabs, its memory kept for the next thread), the registry
 * of every cache (tc_lock) that the statistics walk, and what fork does to
 * it (fork.c holds the policies).  The fast paths that use a cache are in
 * alloc.c.
 *
 * Arenas: a thread starts on arena 0, which every thread shares, and gets
 * one of the others (in turn) at its first refill after it found an
 * arena's lock taken by another thread (sm_arena_waited, alloc.c).  Every
 * size class an arena serves costs it a slab page at least: a program
 * whose threads come and go one at a time (gpg-agent's connection threads)
 * kept 460 KiB of secret memory with a new arena per thread and 296 KiB
 * with one (secretmem-heap(7), PAGES; t_alloc_arena_shared).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include "annotate.h"
#include "tcache.h"

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tcache tc_list = { .next = &tc_list, .prev = &tc_list };
static struct tcache *tc_free; /* memory of exited threads' caches */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t tc_key;
static int init_error;


/*
 * Cache capacity per class, and what a refill takes; none at all with
 * SECRETMEM_RELEASE_IDLE, whose promise needs every free slot back in its
 * slab.
 *
 * A refill takes few slots (32 up to 256 bytes, 16 to 2 KiB, 2 above), so
 * that a class a thread uses once makes few pages ready (density: issue
 * 32), and a bin starts at two refills.  A bin that fills up after a refill
 * came since it last filled up (a burst of blocks allocated and then freed
 * by the same thread) doubles its capacity instead of giving half back, up
 * to 32 KiB of its class (at most 1,024 slots): with 64 slots, 1,000
 * blocks of 32 bytes allocated and freed went through the arena's lock and
 * slab bitmaps at both ends, 227 instructions per block against 159
 * (callgrind).  Only bins that see such bursts grow, so a thread that
 * bursts once keeps about what it kept before: free blocks in other
 * threads' caches are out of reach of an allocation refused at the
 * memory-lock limit, and the grown room is a mapping of its own (about
 * 160 KiB), made at the first growth: under mlockall(MCL_FUTURE) it is
 * locked too.  At the limit a refused thread shrinks its own bins back
 * (alloc.c, make_room).
 */
#define BIN_BYTES 32768u
#define BIN_MAX 1024u

static uint16_t bin_refill(unsigned cls)
{
	uint32_t size = sm_class_size[cls];
	return size <= 256 ? 32 : size <= 2048 ? 16 : 2;
}

static uint16_t bin_cap(unsigned cls)
{
	return sm_release_idle ? 0 : (uint16_t)(2u * bin_refill(cls));
}

static uint16_t bin_max(unsigned cls)
{
	if (sm_release_idle)
		return 0;
	uint32_t n = BIN_BYTES / sm_class_size[cls];
	if (n > BIN_MAX)
		n = BIN_MAX;
	if (n < bin_cap(cls))
		n = bin_cap(cls);
	return (uint16_t)n;
}

/* Every bin empty, at its first capacity, in the cache's first mapping: at
 * creation, and at the thread's end after the flush (a slot a signal
 * handler's free pushed in between is lost, not handed out twice). */
static void bins_first(struct tcache *tc)
{
	struct slotref *next = tc->storage;

	for (unsigned c = 0; c < SM_NCLASS; c++) {
		tc->bins[c].count = 0;
		tc->bins[c].cap = bin_cap(c);
		tc->bins[c].refilled = 0;
		tc->bins[c].slots = next;
		next += tc->bins[c].cap;
	}
}

int sm_tcache_grow(struct tcache *tc, unsigned cls)
{
	struct tbin *b = &tc->bins[cls];

	if (b->cap >= b->max)
		return 0;
	if (!tc->grown) {
		size_t n = 0, ps = os_page_size();
		for (unsigned c = 0; c < SM_NCLASS; c++)
			n += tc->bins[c].max;
		size_t size = (n * sizeof(struct slotref) + ps - 1) & ~(ps - 1);
		void *mem;
		if (os_map_anon(size, &mem))
			return 0; /* no room: the bin flushes as before */
		tc->grown = mem;
		tc->grown_size = size;
	}
	struct slotref *room = tc->grown;
	for (unsigned c = 0; c < cls; c++)
		room += tc->bins[c].max;
	if (b->slots != room) {
		memcpy(room, b->slots, b->count * sizeof(*room));
		b->slots = room;
	}
	unsigned cap = 2u * b->cap;
	b->cap = (uint16_t)(cap < b->max ? cap : b->max);
	return 1;
}

int sm_tcache_shrink(struct tcache *tc)
{
	int gave = 0;

	for (unsigned c = 0; c < SM_NCLASS; c++) {
		struct tbin *b = &tc->bins[c];
		uint16_t first = bin_cap(c);
		if (b->count > first) {
			sm_tcache_flush_some(tc, c, b->count - first);
			gave = 1;
		}
		b->cap = first;
		b->refilled = 0;
	}
	return gave;
}

/* This cache's live blocks and bytes (any thread; relaxed reads). */
static void tcache_counts(const struct tcache *tc, long *live, long *bytes)
{
	for (unsigned c = 0; c < SM_NCLASS; c++) {
		long n = __atomic_load_n(&tc->bins[c].live, __ATOMIC_RELAXED);
		*live += n;
		*bytes += n * (long)sm_class_size[c];
	}
}


/* ---- fork (the policies live in fork.c) -------------------------------- */

void sm_alloc_fork_lock(void)
{
	pthread_mutex_lock(&tc_lock);
}

void sm_alloc_fork_unlock(void)
{
	pthread_mutex_unlock(&tc_lock);
}

void sm_alloc_fork_reinit(void)
{
	pthread_mutex_init(&tc_lock, NULL);
}

/* In the child, tc_lock held: an empty heap.  This thread's cache points
 * into dropped pages, and the other threads' caches died with their threads. */
void sm_alloc_fork_child_empty(void)
{
	struct tcache *tc = sm_tls_tc;

	tc_list.next = tc_list.prev = &tc_list;
	if (tc) {
		tc->lc_len = 0; /* its chunk is gone (and sm_radix_gen moved) */
		for (unsigned c = 0; c < SM_NCLASS; c++)
			tc->bins[c].count = 0, tc->bins[c].live = 0;
		tc->next = tc_list.next;
		tc->prev = &tc_list;
		tc_list.next->prev = tc;
		tc_list.next = tc;
	}
	atomic_store(&sm_retired_live, 0);
	atomic_store(&sm_retired_bytes, 0);
	atomic_store(&sm_idle_live, 0);
}

/* ---- start-up, creation and retirement ----------------------------------- */

static void tcache_destroy(void *arg)
{
	struct tcache *tc = arg;

	sm_tcache_flush_all(tc);
	if (tc->grown) { /* the bins back in the first mapping, then the room goes */
		bins_first(tc);
		os_unmap(tc->grown, tc->grown_size);
		tc->grown = NULL;
	}
	pthread_mutex_lock(&tc_lock);
	long live = 0, bytes = 0;
	tcache_counts(tc, &live, &bytes);
	atomic_fetch_add(&sm_retired_live, live);
	atomic_fetch_add(&sm_retired_bytes, bytes);
	tc->prev->next = tc->next;
	tc->next->prev = tc->prev;
	tc->next = tc_free;
	tc_free = tc;
	pthread_mutex_unlock(&tc_lock);
	sm_tls_tc = NULL;
}

static void init(void)
{
	int rc = sm_slab_init();

	if (rc) {
		init_error = -rc;
		return;
	}
	sm_options_freeze();
#ifdef SM_VALGRIND
	sm_vg_on = RUNNING_ON_VALGRIND != 0;
#endif
	sm_release_idle = (int)sm_option(SECRETMEM_OPT_RELEASE_IDLE);
	sm_fork_handlers_install();
	if (pthread_key_create(&tc_key, tcache_destroy)) {
		init_error = EAGAIN;
		return;
	}
	size_t reserve = (size_t)sm_option(SECRETMEM_OPT_RESERVE);
	if (reserve && sm_reserve(reserve))
		sm_warn("SECRETMEM_RESERVE: could not fault in the reserve ",
			"(memory-lock limit or memory); continuing without all of it", NULL);
}

struct tcache *sm_tcache_get(void)
{
	pthread_once(&init_once, init);
	if (init_error) {
		errno = init_error;
		return NULL;
	}
	size_t entries = 0;
	for (unsigned c = 0; c < SM_NCLASS; c++)
		entries += bin_cap(c);
	size_t size = sizeof(struct tcache) + entries * sizeof(struct slotref);
	size_t ps = os_page_size();
	size = (size + ps - 1) & ~(ps - 1);

	pthread_mutex_lock(&tc_lock);
	struct tcache *tc = tc_free;
	if (tc)
		tc_free = tc->next;
	pthread_mutex_unlock(&tc_lock);
	if (!tc) {
		void *mem;
		int rc = os_map_anon(size, &mem);
		if (rc) {
			errno = ENOMEM;
			return NULL;
		}
		tc = mem;
	}
	memset(tc, 0, sizeof(*tc));
	tc->mem_size = size;
	for (unsigned c = 0; c < SM_NCLASS; c++) {
		tc->bins[c].max = bin_max(c);
		tc->bins[c].refill = bin_cap(c) ? bin_refill(c) : 1;
	}
	bins_first(tc);
	pthread_mutex_lock(&tc_lock);
	tc->arena = sm_arena(0); /* shared until the thread waits for a lock */
	tc->next = tc_list.next;
	tc->prev = &tc_list;
	tc_list.next->prev = tc;
	tc_list.next = tc;
	pthread_mutex_unlock(&tc_lock);
	pthread_setspecific(tc_key, tc);
	sm_tls_tc = tc;
	return tc;
}

void sm_tcache_own_arena(struct tcache *tc)
{
	tc->arena = sm_arena_own();
}

int sm_alloc_start(void)
{
	pthread_once(&init_once, init);
	return init_error;
}

void sm_tcache_totals(long *live, long *bytes)
{
	*live = atomic_load(&sm_retired_live);
	*bytes = atomic_load(&sm_retired_bytes);
	pthread_mutex_lock(&tc_lock);
	for (struct tcache *tc = tc_list.next; tc != &tc_list; tc = tc->next)
		tcache_counts(tc, live, bytes);
	pthread_mutex_unlock(&tc_lock);
}

/* ---- for the heap module (heap/heap.c): a thread past its TSD destructors -- */

/* Retire this thread's cache now (its slots go back to their slabs), as its
 * destructor would: glibc frees and allocates after the destructors ran. */
void sm_alloc_thread_done(void)
{
	struct tcache *tc = sm_tls_tc;

	if (tc) {
		pthread_setspecific(tc_key, NULL);
		tcache_destroy(tc);
	}
}
