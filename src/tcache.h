/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * tcache.h - a thread's cache of slots, shared by alloc.c (the fast paths
 * that pop and push them), tcache.c (the caches' life: start-up, creation,
 * retirement, the registry, fork) and stats.c.
 */
#ifndef SECRETMEM_TCACHE_H
#define SECRETMEM_TCACHE_H

#include "slab.h"

/*
 * live: blocks of the class this thread allocated minus those it freed
 * (negative when it frees others' blocks); written by the owner only, read
 * by secretmem_stats.  It shares the bin's cache line, which malloc and free
 * touch anyway: per-thread totals in a header line of their own cost a
 * pair about 7 ns in some processes here (that line and the block's
 * sharing an L1 set, measured: 5 of 60 processes at 1.9x glibc with them,
 * 0 of 60 without).
 */
struct tbin {
	uint16_t count, cap;
	uint16_t refill;   /* slots a refill takes */
	uint16_t max;      /* what cap may grow to (tcache.c) */
	uint8_t refilled;  /* a refill came since the bin last filled up */
	long live;
	struct slotref *slots;
} __attribute__((aligned(32))); /* a shift to index, two per cache line */

struct tcache {
	/*
	 * The chunk of this thread's last free of a small block or run:
	 * its pages [lc_lo, lc_lo + lc_len), valid while sm_radix_gen is
	 * lc_gen.  free reads it instead of the radix map's two levels,
	 * whose entries lie at page offsets that depend on the chunk's
	 * address: a slot at the same offset (one in each page) made the
	 * pair 1.2-1.7x slower there (make bench's slot-offset sweep).
	 */
	uintptr_t lc_lo;
	size_t lc_len;
	struct chunk *lc_chunk;
	unsigned long lc_gen;
	struct tcache *next, *prev; /* registry, under tcache.c's lock */
	struct arena *arena;        /* sm_arena(0): the shared one (tcache.c) */
	size_t mem_size;
	struct slotref *grown;      /* room for every bin at its max, mapped at
				     * the first growth (tcache.c), or NULL */
	size_t grown_size;
	struct tbin bins[SM_NCLASS];
	struct slotref storage[];
};


/* ---- alloc.c: what the fast paths read --------------------------------- */

/* The calling thread's cache, or NULL before its first call. */
extern __thread struct tcache *sm_tls_tc __attribute__((tls_model("initial-exec")));
/* SECRETMEM_RELEASE_IDLE in force; then the live blocks, counted. */
extern int sm_release_idle;
extern atomic_long sm_idle_live;
/* Blocks and bytes of exited threads (and of frees by a thread without a
 * cache). */
extern atomic_long sm_retired_live, sm_retired_bytes;
/* Running under valgrind (set at start-up). */
extern int sm_vg_on;
/* Every cached slot of tc back to its slab. */
void sm_tcache_flush_all(struct tcache *tc);
/* The n oldest cached slots of bin cls of tc back to their slabs. */
void sm_tcache_flush_some(struct tcache *tc, unsigned cls, unsigned n);

/* ---- tcache.c ---------------------------------------------------------- */

/* The allocator started (once): 0, or the errno of its failed start-up. */
int sm_alloc_start(void);
/* The calling thread's new cache (starting the allocator first); NULL with
 * errno set if there is none. */
struct tcache *sm_tcache_get(void);
/* Live blocks and bytes in small slots, every thread's and the exited
 * threads' together (may be negative in a moment of cross-thread frees). */
void sm_tcache_totals(long *live, long *bytes);
/* Move tc off the shared arena 0 to an arena of its own (in turn). */
void sm_tcache_own_arena(struct tcache *tc);
/* Bin cls of tc is full and was refilled since it last filled up: double
 * its capacity (up to its max); 1 if it grew, 0 if the caller flushes. */
int sm_tcache_grow(struct tcache *tc, unsigned cls);
/* Every bin of tc back to its first capacity, what it holds beyond that
 * given back to the slabs; 1 if anything was given back. */
int sm_tcache_shrink(struct tcache *tc);

#endif
