/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * chunk.c - chunks and their pages, and the allocator's regions.
 *
 * Owns: the allocator's counters (sm_ctr); the regions this layer makes (a
 * chunk's, a large block's: created, entered in the radix map, counted,
 * faulted in, ended); the list of chunks; a chunk's size (16 pages, then
 * 256, then a granule); its page map (which pages a slab, a run or a guard
 * page holds); fault-in of its pages by memory-lock regime; the search for
 * free pages (sm_take_pages, which gives kept free runs back first); and
 * the reserve (SECRETMEM_RESERVE).
 *
 * Lock: sm_pages_lock guards the chunk list, every chunk's page map and
 * fault-in, and all run state (run.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include "annotate.h"
#include "slabint.h"

/* ---- counters ---------------------------------------------------------- */

struct sm_ctr sm_ctr;

void sm_counters_get(struct sm_counters *c)
{
	c->mapped_bytes = atomic_load(&sm_ctr.mapped_bytes);
	c->regions = atomic_load(&sm_ctr.regions);
	c->regions_created = atomic_load(&sm_ctr.regions_created);
	c->pages_faulted = atomic_load(&sm_ctr.pages_faulted);
	c->pages_released = atomic_load(&sm_ctr.pages_released);
	c->large_live = atomic_load(&sm_ctr.large_live) + atomic_load(&sm_ctr.run_live);
	c->large_bytes = atomic_load(&sm_ctr.large_bytes) + atomic_load(&sm_ctr.run_bytes);
}

/* ---- the allocator's regions ---------------------------------------------- */

/* smallest chunk (pages) refused for lack of memory since the last release */
static atomic_size_t refused_pages = SIZE_MAX;

/* Create a region for the allocator and count it. */
int sm_new_region(struct region *r, size_t size, int fill, struct owner *o)
{
	static const struct region_tally tally = { &sm_ctr.regions, &sm_ctr.mapped_bytes };
	int rc = region_create(r, size, SM_GRANULE, fill, 0, &tally);

	if (rc)
		return rc;
	rc = sm_radix_set(r->base, r->total, o);
	if (rc) {
		sm_radix_set(r->base, r->total, NULL);
		region_destroy(r);
		return rc;
	}
	atomic_fetch_add(&sm_ctr.regions_created, 1);
	atomic_fetch_add(&sm_ctr.pages_faulted, r->faulted >> sm_page_shift);
	return 0;
}

void sm_end_region(struct region *r)
{
	refused_pages = SIZE_MAX; /* budget came back: try any size again */
	atomic_fetch_add(&sm_ctr.pages_released, r->faulted >> sm_page_shift);
	sm_radix_set(r->base, r->total, NULL);
	SM_SHOW(r->data, r->faulted); /* region_destroy zeroizes it */
	region_destroy(r);
}

int sm_region_ready(struct region *r, size_t upto)
{
	size_t before = r->faulted;
	int rc = region_ready_to(r, upto);

	if (!rc && r->faulted > before)
		atomic_fetch_add(&sm_ctr.pages_faulted, (r->faulted - before) >> sm_page_shift);
	return rc;
}

/* ---- chunks ------------------------------------------------------------ */

#define FAULT_AHEAD_MAX 32 /* pages faulted from the kernel side beyond the need, at most */
#define FIRST_CHUNK_PAGES 16
#define SECOND_CHUNK_PAGES 256 /* and a granule from the third on */

pthread_mutex_t sm_pages_lock = PTHREAD_MUTEX_INITIALIZER;
struct chunk sm_chunk_list = { .next = &sm_chunk_list, .prev = &sm_chunk_list };

/* Under sm_pages_lock: a new chunk of at least need pages.  populate: exactly
 * need pages, all faulted in (the reserve).  Otherwise the size goes by the
 * chunks there are: 16 pages for the first, 256 for the second and a full
 * granule from the third on, so a small program spends 64 KiB of its
 * memory-lock budget (again after a trim that released every chunk, or in a
 * fork child that dropped them) and a growing one makes few chunks.  Each
 * costs a memfd_secret call (with its seccomp check, or a child), the
 * memory-lock figures, a reservation, four more system calls, a new page
 * table and metadata: growing to 20,000 secrets (157 pages) took 4 chunks
 * with doubling, 3 with 16, 64, 256 and 2 now, and went from 1.15-1.17 to
 * 1.09-1.10 times the page-fault floor (median of 80 processes interleaved
 * with the other allocators, A/B in both orders).  A refusal halves the
 * size down to need. */
int sm_chunk_create(size_t need, int populate, struct chunk **out)
{
	size_t maxp = sm_chunk_max_pages();
	/* by the chunks on the list: none, one, or more */
	int none = sm_chunk_list.next == &sm_chunk_list, one = !none && sm_chunk_list.next->next == &sm_chunk_list;
	size_t want = populate ? need : none ? FIRST_CHUNK_PAGES : one ? SECOND_CHUNK_PAGES : maxp;
	int rc = -ENOMEM;

	if (want > maxp)
		want = maxp;
	/* under a memory-lock limit a chunk takes at most a quarter of what
	 * is left of it, so that a small limit (ulimit -l 64) keeps room for
	 * regions and for the next chunks; and none, the reserve's neither
	 * (SECRETMEM_RESERVE), takes the room the copy policy keeps for
	 * fork()'s window (sm_fork_room) */
	int unlimited;
	size_t limit, locked;
	if (sm_secret_new_is_off()) {
		/* a filter would stop the calls below: none is made */
		sm_failure_note(SECRETMEM_FAILURE_SANDBOX, need << sm_page_shift);
		return -EPERM;
	}
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (!unlimited) {
		size_t room = sm_fork_room(limit);
		size_t left = limit > locked + room ? (limit - locked - room) >> sm_page_shift : 0;
		if (want > left / 4)
			want = left / 4;
		if (need > left) {
			sm_failure_note(SECRETMEM_FAILURE_MEMLOCK, need << sm_page_shift);
			return -ENOMEM;
		}
	}
	/* at the memory-lock limit every try costs half a dozen system
	 * calls: start below the last refused size instead of halving down
	 * to it again (need itself is always tried: the limit may have been
	 * raised, or memory unlocked elsewhere) */
	if (want >= refused_pages)
		want = refused_pages / 2;
	if (want < need)
		want = need;
	struct chunk *c = sm_meta_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->own.kind = OWNER_CHUNK;
	for (;;) {
		rc = sm_new_region(&c->reg, want << sm_page_shift, populate ? REGION_NOW : REGION_LAZY, &c->own);
		if (rc != -ENOMEM || want == need)
			break;
		refused_pages = want;
		want = want / 2 > need ? want / 2 : need;
	}
	if (rc) {
		if (rc == -ENOMEM && want < refused_pages)
			refused_pages = want;
		sm_meta_free(c, sizeof(*c));
		return rc;
	}
	c->npages = (uint32_t)want;
	c->next = &sm_chunk_list;
	c->prev = sm_chunk_list.prev;
	sm_chunk_list.prev->next = c;
	sm_chunk_list.prev = c;
	*out = c;
	return 0;
}

void sm_mark_pages(struct chunk *c, size_t first, size_t n, int used)
{
	for (size_t i = first; i < first + n; i++) {
		if (used)
			c->pagemap[i / 64] |= (uint64_t)1 << (i % 64);
		else
			c->pagemap[i / 64] &= ~((uint64_t)1 << (i % 64));
	}
	if (used)
		c->used_pages += (uint32_t)n;
	else
		c->used_pages -= (uint32_t)n;
}

/* First fit of n free pages in c; returns the first page or -1. */
long sm_find_pages(const struct chunk *c, size_t n)
{
	size_t run = 0;

	if (c->npages - c->used_pages < n)
		return -1;
	for (size_t i = 0; i < c->npages; i++) {
		/* a word of used pages at once (growth fills a chunk from the
		 * bottom: every new slab scanned all pages below it one by one) */
		if (run == 0 && i % 64 == 0 && c->pagemap[i / 64] == ~(uint64_t)0) {
			i += 63;
			continue;
		}
		if (sm_page_used(c, i)) {
			run = 0;
			continue;
		}
		if (++run == n)
			return (long)(i + 1 - n);
	}
	return -1;
}

/*
 * Under sm_pages_lock: pages [0, end) of c ready.  In the mmap-time regime
 * (see sm_fault_regime) the chunk is lazy: they are only marked, and each
 * faults at its first touch, by the program or by the zeroing of a free
 * (region.c): a page nobody touches costs nothing, as in anonymous memory.
 * From the kernel side (a read per call),
 * and for the fallback backend (an mlock per call):
 * ahead of the need by as many pages as the chunk has faulted so far
 * (1, 2, 4, ... up to FAULT_AHEAD_MAX), so that a program that needs one
 * page pays for one (each first touch of a secret page costs tens of
 * microseconds) and a growing one makes few system calls; exactly what is
 * needed if the memory-lock budget refuses the batch.
 */
int sm_fault_pages(struct chunk *c, size_t endpage)
{
	size_t end = endpage << sm_page_shift, have = c->reg.faulted;
	int rc = 0;

	if (end > have && c->reg.lazy) {
		rc = sm_region_ready(&c->reg, end);
	} else if (end > have) {
		size_t ahead = have < ((size_t)FAULT_AHEAD_MAX << sm_page_shift) ? have
									   : (size_t)FAULT_AHEAD_MAX << sm_page_shift;
		size_t batch = end + ahead;
		if (batch > c->reg.size)
			batch = c->reg.size;
		rc = sm_region_ready(&c->reg, batch);
		if (rc && batch > end)
			rc = sm_region_ready(&c->reg, end);
	}
	return rc;
}

/* Under sm_pages_lock: n pages, faulted in; secret_only: not in fallback
 * memory.  Free runs kept for reuse go back to the chunks' pages before a
 * new chunk is made. */
int sm_take_pages(size_t n, struct chunk **outc, size_t *first, int secret_only)
{
	struct chunk *c;
	long at = -1;
	int rc;

	for (;;) {
		for (c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next) {
			if (secret_only && c->reg.backend != SECRETMEM_BACKEND_SECRET)
				continue;
			at = sm_find_pages(c, n);
			if (at >= 0)
				break;
		}
		if (at >= 0 || !sm_run_evict_one())
			break;
	}
	if (at < 0) {
		rc = sm_chunk_create(n, 0, &c);
		if (rc)
			return rc;
		at = 0;
	}
	rc = sm_fault_pages(c, (size_t)at + n);
	if (rc)
		return rc;
	sm_mark_pages(c, (size_t)at, n, 1);
	*outc = c;
	*first = (size_t)at;
	return 0;
}

static int reserve(size_t bytes)
{
	size_t pages = (bytes + sm_page_size - 1) >> sm_page_shift, maxp = sm_chunk_max_pages();
	int rc = 0;

	/* each chunk is within the machine's memory, but all of them would
	 * not be: refused whole, not faulted in until the OOM killer comes */
	if (bytes > os_physical_memory()) {
		sm_failure_note(SECRETMEM_FAILURE_NOMEM, bytes);
		return -ENOMEM;
	}
	pthread_mutex_lock(&sm_pages_lock);
	while (pages > 0 && !rc) {
		size_t n = pages < maxp ? pages : maxp;
		struct chunk *c;
		rc = sm_chunk_create(n, 1, &c);
		pages -= n;
	}
	pthread_mutex_unlock(&sm_pages_lock);
	return rc;
}

int sm_reserve(size_t bytes)
{
	int old = sm_cancel_off(), rc = reserve(bytes);

	sm_cancel_restore(old);
	return rc;
}

/* Every kept free run back to its chunk, then every chunk none of whose
 * pages is used back to the system; the bytes those chunks had faulted in. */
size_t sm_chunks_release(void)
{
	size_t freed = 0;

	pthread_mutex_lock(&sm_pages_lock);
	while (sm_run_evict_one())
		;
	for (struct chunk *c = sm_chunk_list.next, *next; c != &sm_chunk_list; c = next) {
		next = c->next;
		if (c->used_pages)
			continue;
		c->prev->next = c->next;
		c->next->prev = c->prev;
		freed += c->reg.faulted;
		sm_end_region(&c->reg);
		sm_meta_free(c, sizeof(*c));
	}
	pthread_mutex_unlock(&sm_pages_lock);
	return freed;
}
