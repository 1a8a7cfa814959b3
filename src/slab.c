/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * slab.c - sm_arenas and slabs: the layer's entry for small blocks (see slab.h
 * for the layer's memory layout), its start-up, and giving unused memory
 * back (secretmem_trim).
 *
 * A slab is 1..8 pages of a chunk holding the slots of one size class, its
 * metadata out of line.  Each of SM_NARENAS sm_arenas keeps, per class, the
 * slabs with free slots and one empty slab against ping-pong; thread caches
 * (alloc.c) take and give slots in batches.
 *
 * The layer's files: class.c (size classes), zero.c (zeroing and the
 * write-after-free checks), resident.c (the pages of lazy regions that
 * hold memory), meta.c (metadata memory), radix.c (granule ->
 * owner map, lookup), chunk.c (chunks, their pages, fault-in, counters),
 * slab.c (this file), run.c (large blocks in chunk pages, guard pages),
 * large.c (larger blocks in regions of their own), forkstate.c (what
 * fork.c's policies need from the layer).  Declarations shared between
 * them: slabint.h; for the layers above: slab.h.
 *
 * Locks, always taken in this order:
 *   arena locks (by index)  ->  sm_large_lock  ->  sm_pages_lock  ->
 *   sm_meta_lock, sm_radix_lock, and the region layer's list lock inside
 *   region_create/destroy.
 * The fast paths of alloc.c take none of them: they use a thread cache and
 * the lock-free radix map, and touch a slot's state byte only while they own
 * the slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "annotate.h"
#include "slabint.h"

struct arena sm_arenas[SM_NARENAS];

unsigned sm_narenas(void)
{
	return SM_NARENAS;
}

struct arena *sm_arena(unsigned i)
{
	return &sm_arenas[i % SM_NARENAS];
}

static void partial_add(struct arena *a, struct slab *s)
{
	s->prev = NULL;
	s->next = a->partial[s->cls];
	if (s->next)
		s->next->prev = s;
	a->partial[s->cls] = s;
	s->on_partial = 1;
}

static void partial_del(struct arena *a, struct slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		a->partial[s->cls] = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	s->on_partial = 0;
}

/* Under a->lock. */
static int slab_create(struct arena *a, unsigned cls, struct slab **out, int secret_only)
{
	unsigned nslots = sm_slab_slots[cls], npages = sm_slab_pages[cls];
	struct slab *s = sm_meta_alloc(sm_slab_meta_size(nslots));
	struct chunk *c;
	size_t first;

	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&sm_pages_lock);
	int rc = sm_take_pages(npages, &c, &first, secret_only);
	if (!rc) {
		s->arena = a;
		s->chunk = c;
		s->start = c->reg.data + (first << sm_page_shift);
		s->size = sm_class_size[cls];
		s->inv = (((uint64_t)1 << 40) + s->size - 1) / s->size;
		s->cls = (uint16_t)cls;
		s->nslots = (uint16_t)nslots;
		s->first_page = (uint16_t)first;
		s->npages = (uint16_t)npages;
		s->freemap = s->storage;
		s->state = (uint8_t *)(s->storage + (nslots + 63) / 64);
		for (unsigned w = 0; w < nslots / 64; w++)
			s->freemap[w] = ~(uint64_t)0;
		if (nslots % 64)
			s->freemap[nslots / 64] = ((uint64_t)1 << (nslots % 64)) - 1;
		SM_HIDE(s->start, (size_t)npages << sm_page_shift);
		for (size_t i = 0; i < npages; i++)
			atomic_store_explicit(&c->page_slab[first + i], s, memory_order_release);
	}
	pthread_mutex_unlock(&sm_pages_lock);
	if (rc) {
		sm_meta_free(s, sm_slab_meta_size(nslots));
		return rc;
	}
	partial_add(a, s);
	*out = s;
	return 0;
}

/* Under a->lock: an empty slab goes back to its chunk's pages.  Its slots
 * are all zero, so the pages can carry any class next. */
static void slab_destroy(struct arena *a, struct slab *s)
{
	struct chunk *c = s->chunk;

	if (s->on_partial)
		partial_del(a, s);
	pthread_mutex_lock(&sm_pages_lock);
	for (size_t i = 0; i < s->npages; i++)
		atomic_store_explicit(&c->page_slab[s->first_page + i], NULL, memory_order_release);
	sm_mark_pages(c, s->first_page, s->npages, 0);
	pthread_mutex_unlock(&sm_pages_lock);
	sm_meta_free(s, sm_slab_meta_size(s->nslots));
}

int sm_slab_fallback(const struct slab *s)
{
	return s->chunk->reg.backend != SECRETMEM_BACKEND_SECRET;
}

__thread int sm_arena_waited __attribute__((tls_model("initial-exec")));

/* Take a's lock; when another thread held it, say so to this thread
 * (tcache.c moves a thread that waited off the shared arena). */
static void arena_lock(struct arena *a)
{
	if (pthread_mutex_trylock(&a->lock) == 0)
		return;
	sm_arena_waited = 1;
	pthread_mutex_lock(&a->lock);
}

struct arena *sm_arena_own(void)
{
	static atomic_uint next;

	return &sm_arenas[1 + atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % (SM_NARENAS - 1)];
}

static int arena_take(struct arena *a, unsigned cls, struct slotref *out, unsigned want, int secret_only)
{
	unsigned got = 0;

	arena_lock(a);
	while (got < want) {
		struct slab *s = a->partial[cls];
		while (s && secret_only && sm_slab_fallback(s))
			s = s->next;
		if (!s) {
			if (got)
				break; /* enough for now: no new slab for a refill */
			int rc = slab_create(a, cls, &s, secret_only);
			if (rc) {
				pthread_mutex_unlock(&a->lock);
				return rc;
			}
		}
		if (s->nalloc == 0 && a->nempty[cls])
			a->nempty[cls]--;
		/* lowest addresses first: the hot part of a slab stays small;
		 * the slab's fields in locals (the state stores may alias them) */
		unsigned char *start = s->start;
		uint8_t *state = s->state;
		size_t size = s->size;
		unsigned words = (s->nslots + 63u) / 64, taken = 0;
		for (unsigned w = 0; w < words && got < want; w++) {
			uint64_t m = s->freemap[w];
			while (m && got < want) {
				unsigned i = w * 64 + (unsigned)__builtin_ctzll(m);
				m &= m - 1;
				atomic_store_explicit((_Atomic uint8_t *)&state[i], SLOT_CACHED, memory_order_relaxed);
				/* filled from the end so that the lowest is popped first */
				out[want - 1 - got].p = start + (size_t)i * size;
				out[want - 1 - got].slab = s;
				got++;
				taken++;
			}
			s->freemap[w] = m;
		}
		s->nalloc = (uint16_t)(s->nalloc + taken);
		if (s->nalloc == s->nslots)
			partial_del(a, s);
	}
	pthread_mutex_unlock(&a->lock);
	if (got < want)
		memmove(out, out + (want - got), got * sizeof(*out));
	return (int)got;
}

/* Locks held, and a new chunk's creation and fault-in may reach a
 * cancellation point (fork.c): cancellation is off inside. */
int sm_arena_take(struct arena *a, unsigned cls, struct slotref *out, unsigned want, int secret_only)
{
	int old = sm_cancel_off(), rc = arena_take(a, cls, out, want, secret_only);

	sm_cancel_restore(old);
	return rc;
}

/* Under a->lock. */
static void give_one(struct arena *a, const struct slotref *r)
{
	struct slab *s = r->slab;
	unsigned i = (unsigned)(((uint64_t)(r->p - s->start) * s->inv) >> 40);

	atomic_store_explicit((_Atomic uint8_t *)&s->state[i], SLOT_FREE, memory_order_relaxed);
	s->freemap[i / 64] |= (uint64_t)1 << (i % 64);
	if (!s->on_partial)
		partial_add(a, s);
	if (--s->nalloc == 0) {
		/* keep one empty slab per class and arena against ping-pong */
		if (a->nempty[s->cls] >= 1)
			slab_destroy(a, s);
		else
			a->nempty[s->cls]++;
	}
}

void sm_arena_give(const struct slotref *refs, unsigned n)
{
	struct arena *held = NULL;

	for (unsigned k = 0; k < n; k++) {
		struct arena *a = refs[k].slab->arena;
		if (a != held) {
			if (held)
				pthread_mutex_unlock(&held->lock);
			arena_lock(a);
			held = a;
		}
		give_one(a, &refs[k]);
	}
	if (held)
		pthread_mutex_unlock(&held->lock);
}

/* ---- start-up and release ------------------------------------------------ */

int sm_slab_init(void)
{
	int rc = sm_class_init(os_page_size());

	if (rc)
		return rc;
	for (unsigned i = 0; i < SM_NARENAS; i++)
		pthread_mutex_init(&sm_arenas[i].lock, NULL);
	sm_zero_init();
	return 0;
}

size_t sm_release_unused(void)
{
	for (unsigned i = 0; i < SM_NARENAS; i++) {
		struct arena *a = &sm_arenas[i];
		pthread_mutex_lock(&a->lock);
		for (unsigned c = 0; c < SM_NCLASS; c++) {
			struct slab *s = a->partial[c], *next;
			for (; s; s = next) {
				next = s->next;
				if (s->nalloc == 0) {
					slab_destroy(a, s);
					a->nempty[c]--;
				}
			}
		}
		pthread_mutex_unlock(&a->lock);
	}
	size_t freed = sm_large_release_cached();
	return freed + sm_chunks_release();
}
