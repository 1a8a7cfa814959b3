/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * slabint.h - what the files of the slab layer share among themselves:
 * class.c, zero.c, resident.c, meta.c, radix.c, chunk.c, slab.c, run.c,
 * large.c and forkstate.c.  The layers above (alloc.c, fork.c, the heap
 * module) use slab.h only.  Each block below names the file that owns it; a lock's
 * comment says what it guards.
 */
#ifndef SECRETMEM_SLABINT_H
#define SECRETMEM_SLABINT_H

#include "slab.h"

/* ---- class.c: page geometry, small and run classes ---------------------- */

extern size_t sm_page_size; /* sm_page_shift: slab.h */
/* pages of a slab of each small class, and its slots */
extern uint16_t sm_slab_pages[SM_NCLASS], sm_slab_slots[SM_NCLASS];
#define SM_RUN_NCLASS_MAX 64
extern unsigned sm_run_nclass;
extern uint16_t sm_run_class_pages[SM_RUN_NCLASS_MAX]; /* run class -> pages */
extern uint8_t sm_run_class_of[SM_CHUNK_MAX_PAGES + 1]; /* pages -> run class */
extern size_t sm_run_max_pages;
/* Page size ps: the geometry and every class table.  0, or -ENOSYS when
 * pages are too large for 2 MiB chunks. */
int sm_class_init(size_t ps);

/* The pages of a full chunk: a granule less its two guard pages. */
static inline size_t sm_chunk_max_pages(void)
{
	size_t n = (SM_GRANULE >> sm_page_shift) - 2;
	return n < SM_CHUNK_MAX_PAGES ? n : SM_CHUNK_MAX_PAGES;
}

/* ---- zero.c ------------------------------------------------------------ */

/* Pick the zero check for this CPU (once, at start-up). */
void sm_zero_init(void);

/* ---- resident.c -------------------------------------------------------- */

/*
 * A large block's bytes [p, p+len) in region r: sm_sample_zero and sm_zero,
 * except in a lazy region (region.c): then only the pages that hold memory
 * are read or zeroed (the others read as zero, and touching them would
 * fault them in).
 */
int sm_sample_ready(const struct region *r, const void *block, size_t len);
void sm_zero_ready(const struct region *r, void *p, size_t len);
/* A run's bytes [p, p+len) in chunk c, zeroed or checked for zero (the
 * sample of sm_sample_zero); in a lazy chunk, unless c->resmap says every
 * page of the range holds memory, only the pages that do (mincore), which
 * are then marked in resmap. */
void sm_chunk_zero(struct chunk *c, void *p, size_t len);
int sm_chunk_sample(struct chunk *c, const void *p, size_t len);
/* A fork child (every lock held): resmap of c made exact again, from the
 * kernel (the copy left pages out that the parent had). */
void sm_chunk_learn(struct chunk *c);
/* [p, p+len) of c zeroed on the pages resmap marks (just learnt: exact);
 * the others hold no memory and read as zero.  Not lazy: sm_zero. */
void sm_chunk_zero_known(struct chunk *c, void *p, size_t len);

/* ---- meta.c ------------------------------------------------------------ */

/* Guards the metadata pools; the innermost lock but the radix map's. */
extern pthread_mutex_t sm_meta_lock;
/* sm_meta_free with sm_meta_lock already held (a fork child). */
void sm_meta_put(void *p, size_t size);

/* ---- radix.c ----------------------------------------------------------- */

/* A block above the run classes: a region of its own (large.c). */
struct large {
	struct owner own;
	int state; /* SLOT_LIVE or SLOT_CACHED */
	struct large *next;
	struct region reg;
	unsigned char *ptr;
	size_t usable;
};

/* Guards writes to the radix map. */
extern pthread_mutex_t sm_radix_lock;
/* The owner of the granule holding a, or NULL; no lock. */
struct owner *sm_radix_get(uintptr_t a);
/* Point every granule of [start, start+len) at o (NULL to clear): 0, or
 * -ENOMEM (beyond the indexed address space, or no memory for a leaf). */
int sm_radix_set(uintptr_t start, size_t len, struct owner *o);
/* In a fork child that dropped the heap: every entry cleared. */
void sm_radix_clear_all(void);

/* ---- chunk.c: counters, the allocator's regions, chunks and pages ------- */

struct sm_ctr {
	atomic_size_t mapped_bytes, regions, regions_created, pages_faulted, pages_released;
	atomic_size_t large_live, large_bytes;
	atomic_size_t run_live, run_bytes; /* written under sm_pages_lock only */
};
extern struct sm_ctr sm_ctr;

/* A counter only written under one lock: no locked instruction needed. */
static inline void sm_ctr_locked_add(atomic_size_t *c, size_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

/* Guards the chunk list, every chunk's page map and fault-in, and all run
 * state (run.c). */
extern pthread_mutex_t sm_pages_lock;
extern struct chunk sm_chunk_list; /* list head, oldest first */

/* A region of the allocator (a chunk's or a large block's), entered in the
 * radix map for o and counted; fill as region_create's (REGION_NOW or
 * REGION_LAZY); 0 or -errno. */
int sm_new_region(struct region *r, size_t size, int fill, struct owner *o);
/* [data, data+upto) of an allocator's region ready (region_ready_to), the
 * new pages counted in pages_faulted; 0 or -ENOMEM. */
int sm_region_ready(struct region *r, size_t upto);
/* Out of the radix map and the counters, and destroyed (zeroized). */
void sm_end_region(struct region *r);

/* Under sm_pages_lock: a new chunk of at least need pages (populate: exactly
 * need, all faulted in), appended to the list; 0 or -errno. */
int sm_chunk_create(size_t need, int populate, struct chunk **out);
static inline int sm_page_used(const struct chunk *c, size_t i)
{
	return (int)((c->pagemap[i / 64] >> (i % 64)) & 1);
}
/* Mark pages [first, first+n) of c used or free, keeping used_pages. */
void sm_mark_pages(struct chunk *c, size_t first, size_t n, int used);
/* First fit of n free pages in c; the first page or -1. */
long sm_find_pages(const struct chunk *c, size_t n);
/* Under sm_pages_lock: pages [0, endpage) of c ready (faulted in, or left
 * to their first touch in a lazy chunk); 0 or -errno. */
int sm_fault_pages(struct chunk *c, size_t endpage);
/* Under sm_pages_lock: n free pages, faulted in, of a chunk (kept free runs
 * given back first, a new chunk made last); secret_only: not in fallback
 * memory.  0 or -errno. */
int sm_take_pages(size_t n, struct chunk **outc, size_t *first, int secret_only);
/* Kept runs back to their chunks, then empty chunks back to the system;
 * the bytes those had faulted in.  Takes sm_pages_lock. */
size_t sm_chunks_release(void);

/* ---- slab.c ------------------------------------------------------------ */

#define SM_NARENAS 8

struct arena {
	pthread_mutex_t lock;
	struct slab *partial[SM_NCLASS]; /* slabs with FREE slots */
	uint16_t nempty[SM_NCLASS];      /* empty slabs kept per class */
} __attribute__((aligned(64)));

extern struct arena sm_arenas[SM_NARENAS];

/* Bytes of metadata of a slab (or run) of nslots slots. */
static inline size_t sm_slab_meta_size(unsigned nslots)
{
	return sizeof(struct slab) + ((nslots + 63) / 64) * 8 + nslots;
}

/* ---- run.c ------------------------------------------------------------- */

/* A run for use bytes at align (<= a page): 0, -ENOSPC if above the run
 * classes, or -errno. */
int sm_run_alloc(size_t use, size_t align, void **out, size_t *usable);
/* Under sm_pages_lock: the oldest kept free run back to its chunk; 0 if none. */
int sm_run_evict_one(void);
/* Under sm_pages_lock: kept run s off the lists of kept runs. */
void sm_run_unlink_cached(struct slab *s);
/* Under sm_pages_lock: the run's pages (all zero) back to its chunk.
 * protect 0: in a fork child, every lock already held. */
void sm_run_release(struct slab *s, int protect);
/* In a fork child that dropped the heap: no kept run, no guard page. */
void sm_run_forget_all(void);
/* Whether page pg of c is a guard page of a run. */
static inline int sm_is_guard(const struct chunk *c, size_t pg)
{
	return c->guard_ref[pg] != 0;
}

/* ---- large.c ----------------------------------------------------------- */

/* Guards the cache of freed large blocks. */
extern pthread_mutex_t sm_large_lock;
/* Every cached block back to the system; the bytes they had faulted in. */
size_t sm_large_release_cached(void);
/* In a fork child, every lock held: the cached blocks, off the cache. */
struct large *sm_large_cache_detach(void);

#endif
