/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * run.c - runs: large blocks carved from chunk pages, their guard pages,
 * and the cache of freed runs.
 *
 * A block above SM_SMALL_MAX and up to the largest run class is a run: a
 * 1-slot slab of whole pages of a chunk.  Page counts come in four classes
 * per doubling (5, 6, 7, 8, 10, 12, 14, 16, 20, ... pages with 4 KiB pages:
 * at most 25 % more pages than needed; class.c).  The block's end touches the page
 * above the run, an inaccessible guard page; the page below the run is a
 * guard page too.  Neighbouring runs share a guard page (guard_ref counts
 * its runs), the chunk's own inaccessible neighbours serve at its ends, and
 * the protection is set once, when the run is carved, and restored when its
 * last run goes back to the chunk's free pages: nothing per allocation.
 *
 * A freed run is zeroed (from the page holding the block's start to the
 * end) and kept on its class's list for the next block of that class, so
 * steady churn maps nothing and faults nothing.  In a lazy chunk (region.c)
 * a run's pages fault at the program's first touch: the zeroing and the
 * reuse check ask the kernel (mincore) which pages hold memory, unless the
 * chunk already knows they all do (resident.c), so malloc(1 MiB) and a byte
 * written costs one secret page, as it costs glibc one page, and steady
 * churn asks no more once its pages are in.  Kept runs past
 * RUN_CACHE_BYTES, or when pages are needed for a slab or another run, or
 * at secretmem_trim(), go back to the chunk's free pages (oldest first);
 * the chunk itself goes when none of its pages is used.
 *
 * Each guard page splits the chunk's mapping (up to two more VMAs): past
 * run_guard_limit guard pages, runs are carved without guard pages, so a
 * heap of any size stays far below vm.max_map_count (65530 by default).
 *
 * All run state is under sm_pages_lock; a run's state byte is written with
 * an atomic step by its owner (free) as for slots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "annotate.h"
#include "slabint.h"

#define RUN_CACHE_BYTES ((size_t)16 << 20)
#define RUN_GUARDS_DEFAULT 8192 /* at most ~16,400 extra VMAs */

static struct slab *run_free_head[SM_RUN_NCLASS_MAX]; /* kept free runs */
static struct slab *lru_head, *lru_tail;
static size_t run_cached_bytes, run_guards, run_guard_limit = RUN_GUARDS_DEFAULT;

size_t sm_run_guard_limit(size_t n)
{
	pthread_mutex_lock(&sm_pages_lock);
	size_t old = run_guard_limit;
	run_guard_limit = n ? n : RUN_GUARDS_DEFAULT;
	pthread_mutex_unlock(&sm_pages_lock);
	return old;
}

size_t sm_run_guards(void)
{
	pthread_mutex_lock(&sm_pages_lock);
	size_t n = run_guards;
	pthread_mutex_unlock(&sm_pages_lock);
	return n;
}

/* Under sm_pages_lock: make page pg of c a guard page for one more run (set
 * PROT_NONE if it was a free page).  1 if it is a guard page now. */
static int guard_get(struct chunk *c, size_t pg)
{
	if (c->guard_ref[pg] == 0) {
		if (run_guards >= run_guard_limit)
			return 0;
		if (os_protect(c->reg.data + (pg << sm_page_shift), sm_page_size, PROT_NONE))
			return 0; /* e.g. vm.max_map_count reached: unguarded */
		sm_mark_pages(c, pg, 1, 1);
		run_guards++;
	}
	c->guard_ref[pg]++;
	return 1;
}

/* Under sm_pages_lock: one run less next to guard page pg; the last one gives
 * the page back (protect: restore its access; 0 in a fork child, whose copy
 * is accessible everywhere). */
static void guard_put(struct chunk *c, size_t pg, int protect)
{
	if (--c->guard_ref[pg])
		return;
	run_guards--;
	if (protect && os_protect(c->reg.data + (pg << sm_page_shift), sm_page_size, PROT_READ | PROT_WRITE))
		return; /* the page stays out of use */
	sm_mark_pages(c, pg, 1, 0);
}

/*
 * First fit of n free pages in c for a guarded run: the page below and the
 * page above must each be a guard page already, the chunk's end, or a free
 * page (which becomes one).  Returns the first page or -1.
 */
static long find_run(const struct chunk *c, size_t n)
{
	size_t np = c->npages, i = 0;

	if (np - c->used_pages < n)
		return -1;
	while (i < np) {
		if (sm_page_used(c, i)) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < np && !sm_page_used(c, j))
			j++;
		/* free pages [i, j) */
		int lo_ok = i == 0 || sm_is_guard(c, i - 1), hi_ok = j == np || sm_is_guard(c, j);
		/* share a guard page above (not the chunk's end: the pages
		 * below are faulted in first) */
		if (j < np && hi_ok && !lo_ok && j - i >= n + 1)
			return (long)(j - n);
		size_t start = i + !lo_ok;
		if (start + n < j || (start + n == j && hi_ok))
			return (long)start;
		i = j;
	}
	return -1;
}

static size_t run_meta_size(void)
{
	return sm_slab_meta_size(1);
}

void sm_run_unlink_cached(struct slab *s)
{
	unsigned rc = s->cls - SM_NCLASS;

	if (s->prev)
		s->prev->next = s->next;
	else
		run_free_head[rc] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (s->lru_prev)
		s->lru_prev->lru_next = s->lru_next;
	else
		lru_head = s->lru_next;
	if (s->lru_next)
		s->lru_next->lru_prev = s->lru_prev;
	else
		lru_tail = s->lru_prev;
	s->next = s->prev = s->lru_next = s->lru_prev = NULL;
	s->on_partial = 0;
	run_cached_bytes -= (size_t)s->npages << sm_page_shift;
}

/* Under sm_pages_lock: the run's pages (all zero) go back to its chunk.
 * protect 0: in a fork child, every lock already held (fork.c). */
void sm_run_release(struct slab *s, int protect)
{
	struct chunk *c = s->chunk;

	for (size_t i = 0; i < s->npages; i++)
		atomic_store_explicit(&c->page_slab[s->first_page + i], NULL, memory_order_release);
	sm_mark_pages(c, s->first_page, s->npages, 0);
	if (s->glo)
		guard_put(c, s->first_page - 1u, protect);
	if (s->ghi)
		guard_put(c, (size_t)s->first_page + s->npages, protect);
	if (protect)
		sm_meta_free(s, run_meta_size());
	else
		sm_meta_put(s, run_meta_size());
}

/* Under sm_pages_lock: give the oldest kept run back to its chunk; 0 if none. */
int sm_run_evict_one(void)
{
	struct slab *s = lru_tail;

	if (!s)
		return 0;
	sm_run_unlink_cached(s);
	sm_run_release(s, 1);
	return 1;
}

/* Under sm_pages_lock: carve a new run of class rc (faulted in, guarded if
 * the guard budget allows). */
static int run_carve(unsigned rc, int secret_only, struct slab **out)
{
	size_t n = sm_run_class_pages[rc];
	int guarded = run_guards + 2 <= run_guard_limit;
	struct chunk *c;
	long at = -1;
	int err;

	for (;;) {
		for (c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next) {
			if (secret_only && c->reg.backend != SECRETMEM_BACKEND_SECRET)
				continue;
			at = guarded ? find_run(c, n) : sm_find_pages(c, n);
			if (at >= 0)
				break;
		}
		if (at >= 0 || !sm_run_evict_one())
			break;
	}
	if (at < 0) {
		err = sm_chunk_create(n + 1, 0, &c); /* room for the guard above */
		if (err)
			return err;
		at = 0;
	}
	size_t first = (size_t)at, end = first + n;
	err = sm_fault_pages(c, end < c->npages ? end + 1 : end);
	if (err)
		return err;
	struct slab *s = sm_meta_alloc(run_meta_size());
	if (!s)
		return -ENOMEM;
	s->chunk = c;
	s->cls = (uint16_t)(SM_NCLASS + rc);
	s->nslots = 1;
	s->first_page = (uint16_t)first;
	s->npages = (uint16_t)n;
	s->freemap = s->storage;
	s->state = (uint8_t *)(s->storage + 1);
	sm_mark_pages(c, first, n, 1);
	if (guarded) {
		s->glo = first > 0 && guard_get(c, first - 1);
		s->ghi = end < c->npages && guard_get(c, end);
	}
	SM_HIDE(c->reg.data + (first << sm_page_shift), n << sm_page_shift);
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&c->page_slab[first + i], s, memory_order_release);
	*out = s;
	return 0;
}

static unsigned char *run_end(const struct slab *s)
{
	return s->chunk->reg.data + (((size_t)s->first_page + s->npages) << sm_page_shift);
}

/* Place a block of use bytes (aligned to align) in run s and make it live. */
static void run_place(struct slab *s, size_t use, size_t align)
{
	unsigned char *end = run_end(s);

	s->start = (unsigned char *)(((uintptr_t)end - use) & ~((uintptr_t)align - 1));
	s->size = (uint32_t)use;
	s->inv = (((uint64_t)1 << 40) + use - 1) / use;
	SM_UNPOISON(s->start, use);
	atomic_store_explicit((_Atomic uint8_t *)&s->state[0], SLOT_LIVE, memory_order_release);
}

/* A run for use bytes at align (<= a page); -ENOSPC if above the classes. */
int sm_run_alloc(size_t use, size_t align, void **out, size_t *usable)
{
	size_t need = use + (align > 16 ? align - 16 : 0);
	size_t pages = (need + sm_page_size - 1) >> sm_page_shift;
	int secret_only = atomic_load_explicit(&sm_fallback_regions, memory_order_relaxed) &&
			  sm_option(SECRETMEM_OPT_REQUIRE);
	int err = 0;

	if (pages > sm_run_max_pages)
		return -ENOSPC;
	unsigned rc = sm_run_class_of[pages];
	pthread_mutex_lock(&sm_pages_lock);
	struct slab *s = run_free_head[rc];
	while (s && secret_only && sm_slab_fallback(s))
		s = s->next;
	if (s) {
		sm_run_unlink_cached(s); /* no system call: nothing to cancel */
	} else {
		/* cancellation off: a cancelled carve would leave the lock
		 * held or a new chunk unreachable */
		int old = sm_cancel_off();
		err = run_carve(rc, secret_only, &s);
		sm_cancel_restore(old);
	}
	if (!err) {
		sm_ctr_locked_add(&sm_ctr.run_live, 1);
		sm_ctr_locked_add(&sm_ctr.run_bytes, use);
	}
	pthread_mutex_unlock(&sm_pages_lock);
	if (err)
		return err;
	unsigned char *end = run_end(s);
	unsigned char *start = (unsigned char *)(((uintptr_t)end - use) & ~((uintptr_t)align - 1));
	SM_SHOW(start, (size_t)(end - start));
	if (!sm_chunk_sample(s->chunk, start, (size_t)(end - start)))
		sm_fatal("freed block was modified (write after free)");
	run_place(s, use, align);
	*out = s->start;
	*usable = use;
	return 0;
}

void sm_run_free(struct slab *s)
{
	size_t size = s->size;
	/* from the page holding the start: the slack before it too */
	unsigned char *from = (unsigned char *)((uintptr_t)s->start & ~(uintptr_t)(sm_page_size - 1));
	size_t len = (size_t)(run_end(s) - from);
	SM_SHOW(from, len);
	sm_chunk_zero(s->chunk, from, len);
	SM_HIDE(from, len);
	unsigned rc = s->cls - SM_NCLASS;
	pthread_mutex_lock(&sm_pages_lock);
	s->prev = NULL;
	s->next = run_free_head[rc];
	if (s->next)
		s->next->prev = s;
	run_free_head[rc] = s;
	s->lru_prev = NULL;
	s->lru_next = lru_head;
	if (lru_head)
		lru_head->lru_prev = s;
	else
		lru_tail = s;
	lru_head = s;
	s->on_partial = 1;
	run_cached_bytes += (size_t)s->npages << sm_page_shift;
	sm_ctr_locked_add(&sm_ctr.run_live, (size_t)-1);
	sm_ctr_locked_add(&sm_ctr.run_bytes, -size);
	while (run_cached_bytes > RUN_CACHE_BYTES && sm_run_evict_one())
		;
	pthread_mutex_unlock(&sm_pages_lock);
}


/* In a fork child that dropped the heap, every lock held: no run is kept
 * and no guard page is set any more. */
void sm_run_forget_all(void)
{
	memset(run_free_head, 0, sizeof(run_free_head));
	lru_head = lru_tail = NULL;
	run_cached_bytes = run_guards = 0;
}
