/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * forkstate.c - the allocator's state at fork (the policies live in fork.c):
 * every lock of the layer taken and released around fork(), what part of
 * each region a copy must keep and which pages are guard pages, and the
 * child's clean-up of its copy (copy policy) or of what it dropped (drop
 * policy).
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include "annotate.h"
#include "slabint.h"

void sm_slab_fork_prepare(void)
{
	for (unsigned i = 0; i < SM_NARENAS; i++)
		pthread_mutex_lock(&sm_arenas[i].lock);
	pthread_mutex_lock(&sm_large_lock);
	pthread_mutex_lock(&sm_pages_lock);
	pthread_mutex_lock(&sm_meta_lock);
	pthread_mutex_lock(&sm_radix_lock);
}

void sm_slab_fork_reinit(void)
{
	for (unsigned i = 0; i < SM_NARENAS; i++)
		pthread_mutex_init(&sm_arenas[i].lock, NULL);
	pthread_mutex_init(&sm_large_lock, NULL);
	pthread_mutex_init(&sm_pages_lock, NULL);
	pthread_mutex_init(&sm_meta_lock, NULL);
	pthread_mutex_init(&sm_radix_lock, NULL);
}

void sm_slab_fork_parent(void)
{
	pthread_mutex_unlock(&sm_radix_lock);
	pthread_mutex_unlock(&sm_meta_lock);
	pthread_mutex_unlock(&sm_pages_lock);
	pthread_mutex_unlock(&sm_large_lock);
	for (unsigned i = SM_NARENAS; i-- > 0;)
		pthread_mutex_unlock(&sm_arenas[i].lock);
}

size_t sm_slab_fork_keep(const struct region *r)
{
	struct owner *o = sm_radix_get(r->base);

	if (o && o->kind == OWNER_CHUNK && &((struct chunk *)o)->reg == r) {
		const struct chunk *c = (const struct chunk *)o;
		size_t last = 0; /* one past the highest page in a slab */
		for (size_t w = 0; w < SM_CHUNK_MAX_PAGES / 64; w++)
			if (c->pagemap[w])
				last = w * 64 + 64 - (size_t)__builtin_clzll(c->pagemap[w]);
		return last << sm_page_shift;
	}
	if (o && o->kind == OWNER_LARGE && &((struct large *)o)->reg == r)
		return __atomic_load_n(&((const struct large *)o)->state, __ATOMIC_ACQUIRE) == SLOT_LIVE ? SIZE_MAX : 0;
	return SIZE_MAX;
}

int sm_slab_fork_guard(const struct region *r, size_t pg)
{
	struct owner *o = sm_radix_get(r->base);

	if (!o || o->kind != OWNER_CHUNK || &((struct chunk *)o)->reg != r)
		return 0;
	const struct chunk *c = (const struct chunk *)o;
	return pg < c->npages && sm_is_guard(c, pg);
}

/*
 * Copy policy: zero every slot of the copied chunks that this process does
 * not hold; give every run that is not live back to its chunk's pages,
 * zeroed (a parent's thread may have been freeing it during the copy); and
 * set the remaining runs' guard pages again (the copy is one accessible
 * mapping).  Every page in use lies in the copied part of its chunk.
 */
static void scrub_free_slots(void)
{
	for (struct chunk *c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next) {
		for (size_t pg = 0; pg < c->npages; pg++) {
			struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_relaxed);
			if (!s || s->first_page != pg)
				continue;
			if (sm_is_run(s)) {
				if (s->state[0] == SLOT_LIVE)
					continue;
				unsigned char *p = c->reg.data + (pg << sm_page_shift);
				size_t len = (size_t)s->npages << sm_page_shift;
				SM_SHOW(p, len);
				sm_chunk_zero_known(c, p, len);
				SM_HIDE(p, len);
				if (s->on_partial)
					sm_run_unlink_cached(s);
				sm_run_release(s, 0);
				continue;
			}
			for (unsigned i = 0; i < s->nslots; i++) {
				if (s->state[i] == SLOT_LIVE)
					continue;
				unsigned char *p = s->start + (size_t)i * s->size;
				SM_SHOW(p, s->size);
				sm_chunk_zero_known(c, p, s->size); /* no hole faulted in */
				SM_HIDE(p, s->size);
			}
		}
		for (size_t pg = 0; pg < c->npages; pg++)
			if (sm_is_guard(c, pg) &&
			    os_protect(c->reg.data + (pg << sm_page_shift), sm_page_size, PROT_NONE))
				sm_warn("fork: could not set a guard page in the child", NULL, NULL);
	}
}

/* In a fork child, every lock held: the run counters, recounted from the
 * live runs.  A thread the fork caught between a run's state change and
 * its counter update under sm_pages_lock does not exist in the child. */
void sm_slab_fork_recount(void)
{
	size_t live = 0, bytes = 0;

	for (struct chunk *c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next)
		for (size_t pg = 0; pg < c->npages; pg++) {
			struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_relaxed);
			if (s && s->first_page == pg && sm_is_run(s) && s->state[0] == SLOT_LIVE) {
				live++;
				bytes += s->size;
			}
		}
	atomic_store(&sm_ctr.run_live, live);
	atomic_store(&sm_ctr.run_bytes, bytes);
}

/*
 * Drop policy, before the heap is forgotten: tell valgrind that the blocks
 * which went with the dropped pages are gone, or it reports each of them as
 * a leak of the child.  (A no-op when not under valgrind.)
 */
static void forget_live_blocks(void)
{
#ifdef SM_VALGRIND
	for (struct chunk *c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next) {
		for (size_t pg = 0; pg < c->npages; pg++) {
			struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_relaxed);
			if (!s || s->first_page != pg)
				continue;
			for (unsigned i = 0; i < s->nslots; i++)
				if (s->state[i] == SLOT_LIVE)
					SM_VG_FREE(s->start + (size_t)i * s->size);
		}
	}
	for (size_t i = 0; i < SM_RADIX_L1_SIZE; i++) {
		struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[i], memory_order_relaxed);
		for (size_t j = 0; leaf && j < SM_RADIX_L2_SIZE; j++) {
			struct owner *o = atomic_load_explicit(&leaf[j], memory_order_relaxed);
			struct large *l = (struct large *)o;
			uintptr_t g = ((i << SM_RADIX_L2_BITS) | j) << SM_GRANULE_SHIFT;
			/* a large block spans several granules: count it once */
			if (o && o->kind == OWNER_LARGE && l->state == SLOT_LIVE && (l->reg.base & ~(SM_GRANULE - 1)) == g)
				SM_VG_FREE(l->ptr);
		}
	}
#endif
}

void sm_slab_fork_child(int drop)
{
	struct large *cached = NULL;

	if (!drop) {
		/* the copy left the pages that were not copied empty: what the
		 * parent knew to hold memory no longer does; learnt anew, one
		 * pass per chunk, for the zeroing below */
		for (struct chunk *c = sm_chunk_list.next; c != &sm_chunk_list; c = c->next)
			sm_chunk_learn(c);
		scrub_free_slots();
		sm_slab_fork_recount();
		/* their pages were not copied (fork.c): give them back */
		cached = sm_large_cache_detach();
	}
	if (drop) {
		forget_live_blocks();
		/* the pages are gone (region layer); forget what was on them.
		 * Their metadata is left behind: it is not worth walking. */
		sm_radix_clear_all();
		for (unsigned i = 0; i < SM_NARENAS; i++) {
			memset(sm_arenas[i].partial, 0, sizeof(sm_arenas[i].partial));
			memset(sm_arenas[i].nempty, 0, sizeof(sm_arenas[i].nempty));
		}
		sm_chunk_list.next = sm_chunk_list.prev = &sm_chunk_list;
		sm_run_forget_all();
		sm_large_cache_detach();
		atomic_store(&sm_ctr.mapped_bytes, 0);
		atomic_store(&sm_ctr.regions, 0);
		atomic_store(&sm_ctr.large_live, 0);
		atomic_store(&sm_ctr.large_bytes, 0);
		atomic_store(&sm_ctr.run_live, 0);
		atomic_store(&sm_ctr.run_bytes, 0);
	}
	/* the mutexes were taken by the forking thread, the only one here */
	sm_slab_fork_parent();
	while (cached) {
		struct large *next = cached->next;
		sm_end_region(&cached->reg);
		sm_meta_free(cached, sizeof(*cached));
		cached = next;
	}
}
