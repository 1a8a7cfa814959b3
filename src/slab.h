/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * slab.h - the slab layer's interface to the layers above it (alloc.c,
 * tcache.c, fork.c, the heap module): size classes, chunks, slabs, arenas,
 * runs and large blocks, between secret regions (region.c) and the public
 * allocator.  The layer's files and what each owns: slab.c's opening
 * comment; what they share among themselves: slabint.h.
 *
 * Memory layout:
 *  - A chunk is one secret region (one memfd_secret file, closed at once) of
 *    up to 2 MiB minus two guard pages, alone in a 2 MiB-aligned granule of
 *    address space.  Its pages are faulted in lazily (sm_fault_pages): where
 *    the kernel charged the mapping at mmap time (sm_fault_regime), exactly
 *    as needed, by a user-space touch; else from the kernel side, ahead of
 *    the need by as many as it has (at most 32).  They are carved into
 *    slabs and runs.
 *  - A slab is a run of 1..8 pages of one chunk holding slots of one size
 *    class.  Its metadata (slot states, free bitmap) lives in ordinary
 *    memory, never next to a secret: every byte of a secret page is user data.
 *  - A large block (> SM_SMALL_MAX) up to the largest run class (1 MiB
 *    with 4 KiB pages) is a run: a 1-slot slab of whole pages of a chunk,
 *    of one of four page counts per doubling, between inaccessible guard
 *    pages inside the chunk (shared by neighbouring runs, PROT_NONE set once
 *    when the run is carved), the block's end touching the upper one.  A
 *    freed run is zeroed and kept for the next block of its class; runs
 *    kept past a byte budget, or when pages are needed, go back to the
 *    chunk's free pages.
 *  - A larger block (or one aligned above a page) is a region of its own
 *    between guard pages, the block's end touching the upper guard page.
 *  - A radix map from 2 MiB granule to owner (chunk or large block) finds
 *    the metadata of any pointer without a lock, and tells foreign pointers
 *    from ours.
 */
#ifndef SECRETMEM_SLAB_H
#define SECRETMEM_SLAB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "internal.h"

#define SM_NCLASS 41
#define SM_SMALL_MAX 16384u
#define SM_GRANULE_SHIFT 21
#define SM_GRANULE ((size_t)1 << SM_GRANULE_SHIFT)
#define SM_CHUNK_MAX_PAGES 512 /* bound of the per-chunk page arrays */

extern const uint32_t sm_class_size[SM_NCLASS];

/* Slot states, kept out of line in the slab's metadata. */
enum { SLOT_FREE = 0, SLOT_CACHED = 1, SLOT_LIVE = 2 };

struct arena;
struct chunk;

struct slab {
	/* first cache line: what free's lookup and malloc's hand-out read */
	unsigned char *start;     /* first slot, in secret memory           */
	uint64_t inv;             /* ceil(2^40 / size): offset -> index     */
	uint8_t *state;           /* SLOT_*; written lock-free by its owner  */
	uint32_t size;            /* slot size (the class size)             */
	uint16_t cls, nslots;
	struct chunk *chunk;
	struct arena *arena;      /* whose lock guards the fields below     */
	struct slab *next, *prev; /* the arena's partial list of this class */
	uint16_t nalloc, first_page, npages;
	uint8_t on_partial;       /* run: on the list of kept free runs     */
	uint8_t glo, ghi;         /* run: holds the guard page below/above  */
	struct slab *lru_next, *lru_prev; /* run: all kept free runs, newest first */
	uint64_t *freemap;        /* bit set: slot FREE and in the slab      */
	uint64_t storage[];
};

/* A slot handed to or kept by a thread cache. */
struct slotref {
	unsigned char *p;
	struct slab *slab;
};

/* Result of sm_lookup(). */
enum lookup {
	LOOKUP_OK = 0,       /* the start of a live block              */
	LOOKUP_FOREIGN,      /* not in memory of this allocator        */
	LOOKUP_INTERIOR,     /* ours, but not the start of a block     */
	LOOKUP_NOT_LIVE,     /* the start of a block that is free      */
};

struct blockref {
	struct slab *slab;   /* small block, or NULL                   */
	struct large *large; /* large block, or NULL                   */
	unsigned idx;        /* slot index in slab                     */
	size_t usable;
};

/* Allocator-wide counters (slow paths only). */
struct sm_counters {
	size_t mapped_bytes, regions, regions_created, pages_faulted, pages_released;
	size_t large_live, large_bytes;
};

int sm_slab_init(void);

extern uint8_t sm_class_by4[1024 / 4 + 1];
extern uint8_t sm_class_by256[SM_SMALL_MAX / 256 + 1];

/* size <= SM_SMALL_MAX */
static inline unsigned sm_size_class(size_t size)
{
	if (size <= 1024)
		return sm_class_by4[(size + 3) >> 2];
	return sm_class_by256[(size + 255) >> 8];
}
unsigned sm_narenas(void);
struct arena *sm_arena(unsigned i);

/* Classify p; never fatal. */
int sm_lookup(const void *p, struct blockref *ref);

/* ---- the radix map and chunks, for the inline fast lookup -------------- */

#define SM_ADDR_BITS 47
#define SM_RADIX_L2_BITS 13
#define SM_RADIX_L1_SIZE ((size_t)1 << (SM_ADDR_BITS - SM_GRANULE_SHIFT - SM_RADIX_L2_BITS))
#define SM_RADIX_L2_SIZE ((size_t)1 << SM_RADIX_L2_BITS)

enum { OWNER_CHUNK = 1, OWNER_LARGE = 2 };

struct owner {
	int kind;
};

struct chunk {
	struct owner own;
	uint32_t npages, used_pages; /* with reg.data, in the first cache line */
	struct region reg;
	struct chunk *next, *prev;
	uint64_t pagemap[SM_CHUNK_MAX_PAGES / 64]; /* bit set: page in a slab,
						      a run or a guard page */
	uint8_t guard_ref[SM_CHUNK_MAX_PAGES];     /* runs next to a guard page */
	/* lazy (region.c): bit set: the page is known to hold memory (found so
	 * by a zeroing or a check, resident.c); atomic */
	uint64_t resmap[SM_CHUNK_MAX_PAGES / 64];
	struct slab *_Atomic page_slab[SM_CHUNK_MAX_PAGES];
};

extern struct owner *_Atomic *_Atomic sm_radix[SM_RADIX_L1_SIZE];
extern size_t sm_page_shift;
/*
 * Bumped each time an owner leaves the radix map (a chunk or large block
 * released, every owner forgotten in a fork child): a thread's record of
 * the chunk of its last free (alloc.c) holds only while this is unchanged.
 */
extern atomic_ulong sm_radix_gen;

/* The chunk whose granule holds a, or NULL (not a chunk's, or foreign). */
static inline struct chunk *sm_lookup_chunk(uintptr_t a)
{
	if (SM_UNLIKELY(a >> SM_ADDR_BITS))
		return NULL;
	size_t g = a >> SM_GRANULE_SHIFT;
	struct owner *_Atomic *leaf = atomic_load_explicit(&sm_radix[g >> SM_RADIX_L2_BITS], memory_order_acquire);
	if (SM_UNLIKELY(!leaf))
		return NULL;
	struct owner *o = atomic_load_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], memory_order_acquire);
	if (SM_UNLIKELY(!o || o->kind != OWNER_CHUNK))
		return NULL;
	return (struct chunk *)o;
}

/* The slab (or run) of chunk c whose slot starts at a, in page pg of the
 * chunk (pg < c->npages), and the slot's index; NULL for anything else. */
static inline struct slab *sm_chunk_slot(struct chunk *c, uintptr_t a, size_t pg, unsigned *idx)
{
	struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_acquire);
	if (SM_UNLIKELY(!s))
		return NULL;
	uint64_t off = a - (uintptr_t)s->start;
	unsigned i = (unsigned)((off * s->inv) >> 40);
	if (SM_UNLIKELY((uint64_t)i * s->size != off || i >= s->nslots))
		return NULL;
	*idx = i;
	return s;
}

/*
 * The fast part of sm_lookup for free: the slab (or run) whose slot starts
 * at p, and the slot's index; NULL for anything else (sm_lookup then tells
 * what it is).  The slot's state is not read: free's atomic step does it.
 * *chunk: the chunk that holds it.
 */
static inline struct slab *sm_lookup_slot_chunk(const void *p, unsigned *idx, struct chunk **chunk)
{
	uintptr_t a = (uintptr_t)p;
	struct chunk *c = sm_lookup_chunk(a);
	if (SM_UNLIKELY(!c))
		return NULL;
	size_t pg = (a - (uintptr_t)c->reg.data) >> sm_page_shift; /* below data: huge */
	if (SM_UNLIKELY(pg >= c->npages))
		return NULL;
	*chunk = c;
	return sm_chunk_slot(c, a, pg, idx);
}

static inline struct slab *sm_lookup_slot(const void *p, unsigned *idx)
{
	struct chunk *c;

	return sm_lookup_slot_chunk(p, idx, &c);
}

/*
 * Take up to want FREE slots of class cls from arena a (creating a slab, and
 * a chunk, if needed), mark them CACHED and store them in out.  Returns the
 * number taken (>= 1) or -ENOMEM/-ENOSYS/-EPERM.  secret_only: never from a
 * slab in fallback memory (SECRETMEM_REQUIRE set after fallback was used).
 */
int sm_arena_take(struct arena *a, unsigned cls, struct slotref *out, unsigned want, int secret_only);
/* Set when this thread found an arena's lock held by another thread
 * (sm_arena_take, sm_arena_give); cleared by its reader (alloc.c). */
extern __thread int sm_arena_waited __attribute__((tls_model("initial-exec")));
/* An arena for a thread of its own: the ones after arena 0, in turn. */
struct arena *sm_arena_own(void);
/* 1 if slab s lies in fallback memory (secret_only above skips those). */
int sm_slab_fallback(const struct slab *s);
/* Ordinary memory for library metadata (no malloc): zeroed, or NULL. */
void *sm_meta_alloc(size_t size);
void sm_meta_free(void *p, size_t size);
/* Give CACHED slots (already zeroed) back to their slabs as FREE. */
void sm_arena_give(const struct slotref *refs, unsigned n);

/* Large blocks: usable = round_up(size, 16); the start is a multiple of
 * align (a power of two; below 16 means 16).  0 or -errno. */
int sm_large_alloc(size_t size, size_t align, void **out, size_t *usable);
/* p must be a live large block (checked by the caller via sm_lookup). */
void sm_large_free(struct large *l);
/* 1 if s is a run (a large block in a chunk) rather than a slab. */
static inline int sm_is_run(const struct slab *s)
{
	return s->cls >= SM_NCLASS;
}
/* Free the run s, whose state byte the caller already took from LIVE to
 * CACHED (alloc.c, retire_state): zeroed, kept for reuse. */
void sm_run_free(struct slab *s);
/* The size to allocate for a block that secretmem_realloc() moves to grow
 * it to size: the size class, or run class, holding twice that (room to
 * grow in place), at most SM_SMALL_MAX for a size up to it, at most the
 * largest run class; size itself above that. */
size_t sm_grow_room(size_t size);
/* For tests: guarded runs allowed before runs go unguarded (VMA bound);
 * 0 restores the default.  Returns the previous value. */
size_t sm_run_guard_limit(size_t n);
/* Guard pages currently set (each splits a chunk's mapping in up to 3). */
size_t sm_run_guards(void);

/* Fault in at least bytes of chunk pages now (SECRETMEM_RESERVE). */
int sm_reserve(size_t bytes);
/* Release empty slabs, empty chunks and cached large blocks; bytes freed.
 * everything: also the one empty slab per class kept as hysteresis. */
size_t sm_release_unused(void);
void sm_counters_get(struct sm_counters *c);

/* For fork.c: take / release every lock of this layer. */
void sm_slab_fork_prepare(void);
void sm_slab_fork_parent(void);
/* In a raw child (no handler ran): every lock of this layer initialized
 * again, since its holder may be a thread this process does not have. */
void sm_slab_fork_reinit(void);
/*
 * Locks held: how many bytes from r->data a fork copy must keep.  A chunk:
 * up to its highest page in a slab; a live large block: SIZE_MAX (all that
 * is faulted in); a cached (free) large block: 0; a region that is not the
 * allocator's: SIZE_MAX.
 */
size_t sm_slab_fork_keep(const struct region *r);
/* Locks held: 1 if page pg of region r is an inaccessible guard page of a
 * run (the copy must not read it; the child sets it again). */
int sm_slab_fork_guard(const struct region *r, size_t pg);
/*
 * In the child.  drop: forget every chunk and block (their pages are gone).
 * Otherwise (copy): zero every slot that is not live, since the parent's
 * other threads may have freed blocks between the copy and the fork, give
 * the free runs' pages back to their chunks (zeroed), set the live runs'
 * guard pages again, give back the cached large blocks (not copied), and
 * recount the runs (below).
 */
void sm_slab_fork_child(int drop);
/* In the child, every lock held (copy, and share before the unlock): the
 * live-run counters of secretmem_stats recounted from the runs' states. */
void sm_slab_fork_recount(void);

/* An 8-byte word at any address (slots are only 4-aligned). */
typedef uint64_t __attribute__((may_alias, aligned(1))) sm_word;

/*
 * The write-after-free check of a freed block handed out again: every byte
 * of a small slot up to SM_CHECK_FULL_MAX bytes; above, a sample (its first
 * and last 64 bytes and the first 64 bytes of every page that begins inside
 * it).  Reading a whole cold slot cost the random 16-512 B workload ~16 ns
 * per operation (1.07x -> 1.54x glibc+bzero), the sample ~5.
 */
#define SM_CHECK_FULL_MAX 128u
int sm_sample_zero(const void *p, size_t len);

/* Zero helper that the compiler may not elide (sm_is_zero: internal.h). */
void sm_zero(void *p, size_t len);

/*
 * A freed small slot of more than 64 bytes (alloc.c; up to 64 bytes it
 * checks and zeroes inline): the write-after-free check above, p or fatal
 * "freed block was modified (write after free)"; and its zeroing.  One
 * call each, with AVX2 where the CPU has it (sm_have_avx2, set by the
 * allocator's start-up).  Through sm_is_zero or sm_sample_zero and through
 * sm_zero's memset, the check and the zeroing of the random 16-512 B
 * workload took 44 and 31 instructions per operation (callgrind;
 * bench/RESULTS.md, issue 32).
 */
extern int sm_have_avx2;
void *sm_slot_checked_avx2(void *p, size_t len);
void *sm_slot_checked_generic(void *p, size_t len);
void sm_slot_zero_avx2(void *p, size_t len);
void sm_slot_zero_generic(void *p, size_t len);

static inline void *sm_slot_checked(void *p, size_t len)
{
	return sm_have_avx2 ? sm_slot_checked_avx2(p, len) : sm_slot_checked_generic(p, len);
}

static inline void sm_slot_zero(void *p, size_t len)
{
	if (sm_have_avx2)
		sm_slot_zero_avx2(p, len);
	else
		sm_slot_zero_generic(p, len);
}
/* What a shrink in place of block ref gives up, [p, p+len): zeroed (in a
 * lazy region only the pages that hold memory; the others read as zero). */
void sm_zero_tail(const struct blockref *ref, void *p, size_t len);
/* sm_copy of len bytes of block ref (at src) into dst, a block fresh from
 * the allocator (all zero): in a lazy region only the pages of src that
 * hold memory, so a moving realloc faults in no page the program never
 * touched. */
void sm_copy_ready(const struct blockref *ref, void *dst, const void *src, size_t len);

#endif
