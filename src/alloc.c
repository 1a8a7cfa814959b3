/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * alloc.c - the public allocator API and its fast paths: malloc, free,
 * realloc, the aligned blocks of the heap module, usable size, owns and trim,
 * on thread caches (tcache.h; their life: tcache.c) over the arenas of the
 * slab layer (slab.h).  Statistics: stats.c; fork handling: fork.c.
 *
 * Fast path (no lock, no atomic read-modify-write): malloc pops a slot from
 * the calling thread's cache, checks it is still all zero and marks it live;
 * free finds the slot through the thread's record of its last free's chunk
 * or the lock-free radix map, checks it is live, zeroes it and pushes it on
 * the cache.  Caches are refilled from and
 * flushed to the thread's arena in batches, under that arena's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "annotate.h"
#include "tcache.h"

__thread struct tcache *sm_tls_tc __attribute__((tls_model("initial-exec")));
int sm_release_idle;
atomic_long sm_idle_live; /* live blocks, counted only with sm_release_idle */
atomic_long sm_retired_live, sm_retired_bytes; /* of exited threads */

/*
 * Valgrind annotations off the fast path: a client request costs ~15
 * instructions and a stack array (so a stack-protector canary) each, four
 * per malloc/free pair; outside valgrind the fast path tests one flag.
 */
#ifdef SM_VALGRIND
int sm_vg_on;
static __attribute__((noinline, cold)) void vg_malloc(void *p, size_t n)
{
	SM_VG_MALLOC(p, n);
}
static __attribute__((noinline, cold)) void vg_free(void *p)
{
	SM_VG_FREE(p);
}
static __attribute__((noinline, cold)) void vg_defined(void *p, size_t n)
{
	SM_VG_DEFINED(p, n);
}
#define VG_ON() SM_UNLIKELY(sm_vg_on)
#define VG_MALLOC(p, n) do { if (SM_UNLIKELY(sm_vg_on)) vg_malloc((p), (n)); } while (0)
#define VG_FREE(p) do { if (SM_UNLIKELY(sm_vg_on)) vg_free((p)); } while (0)
#define VG_DEFINED(p, n) do { if (SM_UNLIKELY(sm_vg_on)) vg_defined((p), (n)); } while (0)
#else
#define VG_MALLOC(p, n) ((void)(p), (void)(n))
#define VG_FREE(p) ((void)(p))
#define VG_DEFINED(p, n) ((void)(p), (void)(n))
#define VG_ON() 0
#endif

/*
 * The zero check (every byte up to SM_CHECK_FULL_MAX, a sample above: see
 * slab.h) and the zeroing of a small slot, inline for the classes up
 * to 64 bytes (16 to 64, multiples of 4, slots 4-aligned): a few word loads
 * or stores at overlapping offsets instead of a call.  General registers
 * only (the empty asm keeps the compiler from merging the words into vector
 * code; the stores write zeroes).
 */
static inline int slot_is_zero(const unsigned char *p, uint32_t size)
{
	if (size <= 64) {
		/* [0, 16) and [size-16, size), and above 32 bytes [16, 32) and
		 * [size-32, size-16): every byte of 16 to 64 */
		const sm_word *a0 = (const sm_word *)(const void *)p;
		const sm_word *a1 = (const sm_word *)(const void *)(p + size - 16);
		uint64_t a = a0[0] | a0[1] | a1[0] | a1[1];
		__asm__("" : "+r"(a));
		if (size > 32)
			a |= a0[2] | a0[3] | a1[-2] | a1[-1];
		return a == 0;
	}
	if (size <= SM_CHECK_FULL_MAX)
		return sm_is_zero(p, size);
	return sm_sample_zero(p, size);
}

static inline void slot_zero(unsigned char *p, uint32_t size)
{
	if (size <= 64) {
		sm_word *a0 = (sm_word *)(void *)p, *a1 = (sm_word *)(void *)(p + size - 16);
		a0[0] = a0[1] = a1[0] = a1[1] = 0;
		if (size > 32)
			a0[2] = a0[3] = a1[-2] = a1[-1] = 0;
		__asm__ __volatile__("" : : "r"(p) : "memory"); /* not dead stores */
		return;
	}
	sm_slot_zero(p, size);
}

static void owner_add(long *field, long v)
{
	__atomic_store_n(field, __atomic_load_n(field, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static void flush(struct tcache *tc, unsigned cls, unsigned n)
{
	struct tbin *b = &tc->bins[cls];

	if (n > b->count)
		n = b->count;
	/* the oldest entries, at the bottom, go back; a refill's worth per
	 * hold of the arena's lock, which other threads may be waiting for */
	for (unsigned k = 0; k < n; k += b->refill)
		sm_arena_give(b->slots + k, n - k < b->refill ? n - k : b->refill);
	memmove(b->slots, b->slots + n, (b->count - n) * sizeof(*b->slots));
	b->count = (uint16_t)(b->count - n);
}

void sm_tcache_flush_some(struct tcache *tc, unsigned cls, unsigned n)
{
	flush(tc, cls, n);
}

void sm_tcache_flush_all(struct tcache *tc)
{
	for (unsigned c = 0; c < SM_NCLASS; c++)
		flush(tc, c, tc->bins[c].count);
}

static int set_errno_from(int rc)
{
	sm_failure_hint(); /* once, at the memory-lock limit */
	errno = rc == -ENOSYS || rc == -EPERM ? -rc : ENOMEM;
	return 0;
}

/*
 * secretmem_set_require(1) after fallback memory exists: a slot popped from
 * a fallback slab goes back with every slot of its bin, and the block comes
 * from a secret slab (a new secret chunk if needed, or the REQUIRE error).
 */
static int retake_secret(struct tcache *tc, unsigned cls, struct slotref *r)
{
	struct tbin *b = &tc->bins[cls];

	sm_arena_give(r, 1);
	flush(tc, cls, b->count);
	int got = sm_arena_take(tc->arena, cls, r, 1, 1);
	return got < 0 ? got : 0;
}

static int fallback_forbidden(const struct slab *s)
{
	return sm_option(SECRETMEM_OPT_REQUIRE) && sm_slab_fallback(s);
}

/* ---- malloc and free ------------------------------------------------------- */

static inline void count_alloc(struct tbin *b)
{
	owner_add(&b->live, 1);
	if (sm_release_idle)
		atomic_fetch_add(&sm_idle_live, 1);
}

static inline void count_free(struct tbin *b, long bytes)
{
	if (b) {
		owner_add(&b->live, -1);
	} else { /* a thread without a cache (see secretmem_free) */
		atomic_fetch_sub(&sm_retired_live, 1);
		atomic_fetch_sub(&sm_retired_bytes, bytes);
	}
	if (sm_release_idle && atomic_fetch_sub(&sm_idle_live, 1) == 1)
		sm_release_unused(); /* only what holds no live block goes */
}

/*
 * A new slab or chunk for a small block was refused (the memory-lock limit,
 * memory, or a sandbox): the calling thread's bins shrink back to their
 * first capacity and give the rest back to their slabs, whose pages can
 * then serve any size; 1 if they gave any, and the caller tries once more.
 * Nothing else is given back: what the bins keep (as many as they held at
 * most before they could grow) stays for what the program keeps using, a
 * stream's buffer or a class it allocates and frees at the limit.
 */
static int make_room(void)
{
	struct tcache *tc = sm_tls_tc;

	return tc && sm_tcache_shrink(tc);
}

static void *malloc_large(size_t size, size_t align)
{
	void *p;
	size_t usable;
	int rc = sm_large_alloc(size, align, &p, &usable);

	if (rc) {
		set_errno_from(rc);
		return NULL;
	}
	VG_MALLOC(p, usable);
	if (sm_release_idle)
		atomic_fetch_add(&sm_idle_live, 1);
	return p;
}

/* Hand out slot r of class cls: still all zero (write-after-free check),
 * then live. */
static inline __attribute__((always_inline)) void *hand_out(struct tbin *b, struct slotref r)
{
	struct slab *s = r.slab;
	unsigned idx = (unsigned)(((uint64_t)(r.p - s->start) * s->inv) >> 40);

	SM_SLOT_UNPOISON(r.p, s->size);
	VG_DEFINED(r.p, s->size);
	if (SM_UNLIKELY(!slot_is_zero(r.p, s->size)))
		sm_fatal("freed block was modified (write after free)");
	atomic_store_explicit((_Atomic uint8_t *)&s->state[idx], SLOT_LIVE, memory_order_relaxed);
	VG_MALLOC(r.p, s->size);
	count_alloc(b);
	return r.p;
}

/* Everything but a pop from a non-empty bin: the first call of a thread, a
 * large block, a refill, fallback memory under SECRETMEM_REQUIRE. */
static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	sm_gate_check(); /* a raw child's heap starts empty */
	struct tcache *tc = sm_tls_tc;

	if (SM_UNLIKELY(!tc)) {
		tc = sm_tcache_get();
		if (!tc)
			return NULL;
	}
	if (SM_UNLIKELY(size > SM_SMALL_MAX))
		return malloc_large(size, 16);

	unsigned cls = sm_size_class(size);
	struct tbin *b = &tc->bins[cls];
	struct slotref r;

	if (SM_LIKELY(b->count)) {
		r = b->slots[--b->count];
	} else {
		unsigned want = b->refill;
		int got = sm_arena_take(tc->arena, cls, b->cap ? b->slots : &r, want, 0);
		if (got < 0 && make_room())
			got = sm_arena_take(tc->arena, cls, b->cap ? b->slots : &r, want, 0);
		if (got < 0) {
			set_errno_from(got);
			return NULL;
		}
		if (SM_UNLIKELY(sm_arena_waited)) {
			sm_arena_waited = 0;
			if (tc->arena == sm_arena(0))
				sm_tcache_own_arena(tc); /* from the next refill on */
		}
		if (b->cap) {
			b->count = (uint16_t)got;
			b->refilled = 1;
			r = b->slots[--b->count];
		}
	}
	if (SM_UNLIKELY(atomic_load_explicit(&sm_fallback_regions, memory_order_relaxed)) &&
	    fallback_forbidden(r.slab)) {
		int rc = retake_secret(tc, cls, &r);
		if (rc) {
			set_errno_from(rc);
			return NULL;
		}
	}
	return hand_out(b, r);
}

/*
 * On their fast paths every call secretmem_malloc and secretmem_free make is
 * a tail call, the last thing they do, so they keep almost nothing on the
 * stack: malloc saves no callee-saved register, free one (rbx, for the
 * record lookup; gcc 12 -O2).  The prologue and epilogue of five such
 * registers each (20 stack accesses per pair) made the 32-byte pair
 * 1.16-1.19x glibc+bzero's time; without them 0.98-1.02x (make bench,
 * BENCH_ONLY, before the record).
 */

/* hand_out, out of line: under valgrind. */
static __attribute__((noinline)) void *hand_out_call(struct tbin *b, unsigned char *p, struct slab *s)
{
	struct slotref r = { p, s };

	return hand_out(b, r);
}

SM_API void *secretmem_malloc(size_t size)
{
	struct tcache *tc = sm_tls_tc;

	if (SM_UNLIKELY(!tc || size > SM_SMALL_MAX ||
			!atomic_load_explicit(&sm_gate_get()->open, memory_order_relaxed)))
		return malloc_slow(size);
	struct tbin *b = &tc->bins[sm_size_class(size)];
	if (SM_UNLIKELY(!b->count))
		return malloc_slow(size);
	/* hand_out, with the check last (the block is not returned before it) */
	const struct slotref *e = &b->slots[--b->count];
	unsigned char *p = e->p;
	struct slab *s = e->slab;
	/* SECRETMEM_RELEASE_IDLE: never here (its bins hold nothing) */
	if (SM_UNLIKELY(VG_ON()))
		return hand_out_call(b, p, s);
	uint32_t sz = s->size;
	unsigned idx = (unsigned)(((uint64_t)(p - s->start) * s->inv) >> 40);
	SM_SLOT_UNPOISON(p, sz);
	/* up to 64 bytes the check comes first, as in hand_out: see below */
	if (sz <= 64 && SM_UNLIKELY(!slot_is_zero(p, sz)))
		sm_fatal("freed block was modified (write after free)");
	atomic_store_explicit((_Atomic uint8_t *)&s->state[idx], SLOT_LIVE, memory_order_relaxed);
	owner_add(&b->live, 1);
	return sz > 64 ? sm_slot_checked(p, sz) : p;
}

/* Classify p for free/realloc/usable_size: fatal unless a live block. */
static void must_be_live(const void *p, struct blockref *ref)
{
	switch (sm_lookup(p, ref)) {
	case LOOKUP_OK:
		return;
	case LOOKUP_NOT_LIVE:
		sm_fatal("double free");
	case LOOKUP_INTERIOR:
		sm_fatal("invalid pointer (not the start of a block)");
	default:
		sm_fatal("invalid pointer (not allocated by secretmem)");
	}
}

/* A freed slot straight back to its slab (no cache). */
static __attribute__((noinline)) void give_back(void *p, struct slab *s)
{
	struct slotref r = { p, s };

	sm_arena_give(&r, 1);
}

/* A freed block's state byte (a slot's or a run's): LIVE -> CACHED, fatal
 * "double free" if it was not live.  order: of the step's success. */
static inline __attribute__((always_inline)) void retire_state(uint8_t *st, memory_order order)
{
	_Atomic uint8_t *state = (_Atomic uint8_t *)st;
	uint8_t expected = SLOT_LIVE;

	if (SM_SINGLE_THREADED()) {
		/* one thread: nobody else can free it meanwhile (a locked
		 * compare-exchange costs ~12 % of a batch of frees here) */
		if (SM_UNLIKELY(atomic_load_explicit(state, memory_order_relaxed) != SLOT_LIVE))
			sm_fatal("double free");
		atomic_store_explicit(state, SLOT_CACHED, memory_order_relaxed);
	} else if (!atomic_compare_exchange_strong_explicit(state, &expected, SLOT_CACHED, order,
							     memory_order_relaxed)) {
		/* one atomic step: two threads freeing the same block cannot
		 * both win */
		sm_fatal("double free");
	}
}

/* A retired, zeroed slot onto the thread's cache b (not full). */
static inline __attribute__((always_inline)) void cache_push(struct tbin *b, void *p, struct slab *s)
{
	b->slots[b->count].p = p;
	b->slots[b->count++].slab = s;
}

/* Free the live-or-not small slot idx of slab s at p (fatal if not live). */
static inline __attribute__((always_inline)) void free_small(struct tcache *tc, void *p, struct slab *s, unsigned idx)
{
	retire_state(&s->state[idx], memory_order_relaxed);
	slot_zero(p, s->size);
	VG_FREE(p);
	SM_SLOT_POISON(p, s->size);

	struct tbin *b = tc ? &tc->bins[s->cls] : NULL;
	if (SM_UNLIKELY(!b || !b->cap)) {
		give_back(p, s);
	} else {
		if (SM_UNLIKELY(b->count == b->cap)) {
			/* full: twice the room after a refill since it last
			 * filled up (a burst: tcache.c), else half goes back */
			if (!(b->refilled && sm_tcache_grow(tc, s->cls)))
				flush(tc, s->cls, b->cap / 2u);
			b->refilled = 0;
		}
		cache_push(b, p, s);
	}
	count_free(b, s->size);
}

/* Free the run s whose block starts at p (fatal if not live, before
 * valgrind hears of the free). */
static __attribute__((noinline)) void free_run(void *p, struct slab *s)
{
	retire_state(&s->state[0], memory_order_acq_rel);
	VG_FREE(p);
	sm_run_free(s);
	if (sm_release_idle && atomic_fetch_sub(&sm_idle_live, 1) == 1)
		sm_release_unused();
}

static void free_block(struct tcache *tc, void *p, const struct blockref *ref)
{
	if (ref->large) {
		VG_FREE(p);
		sm_large_free(ref->large);
		if (sm_release_idle && atomic_fetch_sub(&sm_idle_live, 1) == 1)
			sm_release_unused();
		return;
	}
	struct slab *s = ref->slab;
	if (SM_UNLIKELY(sm_is_run(s))) {
		free_run(p, s);
		return;
	}
	free_small(tc, p, s, ref->idx);
}

/* free_small, out of line: a full cache, or valgrind. */
static __attribute__((noinline)) void free_small_call(struct tcache *tc, void *p, struct slab *s, unsigned idx)
{
	free_small(tc, p, s, idx);
}

/*
 * A freed slot above 64 bytes, retired: zeroed, then pushed on the thread's
 * cache (not full).  A slot is never in a cache with its old contents: a
 * signal handler on this thread that allocates, or leaves free by
 * siglongjmp, finds only zeroed slots there.
 */
static __attribute__((noinline)) void zero_push(struct tbin *b, unsigned char *p, struct slab *s, uint32_t size)
{
	sm_slot_zero(p, size);
	SM_SLOT_POISON(p, size);
	cache_push(b, p, s);
	owner_add(&b->live, -1);
}

static __attribute__((noinline)) void free_slow(void *p)
{
	struct blockref ref;

	must_be_live(p, &ref);
	struct tcache *tc = sm_tls_tc;
	/* no memory for this thread's cache: the block still goes back, to
	 * its slab directly, since a free must never fail */
	if (SM_UNLIKELY(!tc)) {
		int saved = errno;
		tc = sm_tcache_get();
		errno = saved;
	}
	free_block(tc, p, &ref);
}

static inline int record_holds(const struct tcache *tc, uintptr_t a, unsigned long gen)
{
	return a - tc->lc_lo < tc->lc_len && tc->lc_gen == gen;
}

int sm_alloc_free_record_covers(const void *p)
{
	struct tcache *tc = sm_tls_tc;

	return tc && record_holds(tc, (uintptr_t)p, atomic_load(&sm_radix_gen));
}

/* sm_lookup_slot for this thread's free: the chunk of its last free first,
 * then the radix map (which replaces that record when it finds a chunk). */
static inline __attribute__((always_inline)) struct slab *lookup_slot(struct tcache *tc, const void *p,
								    unsigned *idx)
{
	uintptr_t a = (uintptr_t)p;
	/* read before the radix map: a release after it makes the record
	 * below stale at once */
	unsigned long gen = atomic_load_explicit(&sm_radix_gen, memory_order_acquire);

	if (SM_LIKELY(record_holds(tc, a, gen)))
		return sm_chunk_slot(tc->lc_chunk, a, (a - tc->lc_lo) >> sm_page_shift, idx);
	struct chunk *c;
	struct slab *s = sm_lookup_slot_chunk(p, idx, &c);
	if (s) {
		tc->lc_lo = (uintptr_t)c->reg.data;
		tc->lc_len = (size_t)c->npages << sm_page_shift;
		tc->lc_chunk = c;
		tc->lc_gen = gen;
	}
	return s;
}

/* Fast paths: the start of a slot of a small class when this thread has a
 * cache, and the start of a run (sm_lookup_slot found the block's exact
 * start: the run's state byte tells a double free); everything else (and
 * every error's diagnosis) in free_slow. */
SM_API void secretmem_free(void *p)
{
	struct tcache *tc = sm_tls_tc;
	unsigned idx;
	struct slab *s;

	if (!p)
		return;
	s = SM_LIKELY(tc != NULL) ? lookup_slot(tc, p, &idx) : sm_lookup_slot(p, &idx);
	if (SM_LIKELY(s && tc && !sm_is_run(s))) {
		/* free_small, inline up to 64 bytes; above, the zeroing and the
		 * push out of line, as a tail call (see secretmem_malloc) */
		struct tbin *b = &tc->bins[s->cls];
		uint32_t size = s->size;
		if (SM_UNLIKELY(b->count >= b->cap || VG_ON())) {
			free_small_call(tc, p, s, idx);
			return;
		}
		retire_state(&s->state[idx], memory_order_relaxed);
		if (size > 64) {
			zero_push(b, p, s, size);
			return;
		}
		slot_zero(p, size);
		SM_SLOT_POISON(p, size);
		cache_push(b, p, s);
		owner_add(&b->live, -1);
	} else if (s && sm_is_run(s))
		free_run(p, s);
	else
		free_slow(p);
}

/*
 * A small block lies at a multiple of its class size from a page-aligned
 * slab start: a class that is a multiple of align gives aligned slots for
 * any align up to a page.  Above that, or with no such class, a large block.
 */
void *sm_alloc_aligned(size_t align, size_t size)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	sm_gate_check();
	/* the class tables below are filled by the allocator's start-up */
	if (!sm_tls_tc && !sm_tcache_get())
		return NULL;
	if (align <= os_page_size() && size <= SM_SMALL_MAX) {
		for (unsigned c = sm_size_class(size ? size : 1); c < SM_NCLASS; c++)
			if (sm_class_size[c] % align == 0)
				return secretmem_malloc(sm_class_size[c]);
	}
	return malloc_large(size > SM_SMALL_MAX ? size : SM_SMALL_MAX + 1, align);
}

SM_API void *secretmem_calloc(size_t nmemb, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(nmemb, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return secretmem_malloc(total); /* blocks are handed out zeroed */
}

SM_API void *secretmem_realloc(void *p, size_t size)
{
	struct blockref ref;

	if (!p)
		return secretmem_malloc(size);
	must_be_live(p, &ref);
	if (size == 0) {
		secretmem_free(p);
		return NULL;
	}
	size_t usable = ref.usable;
	int keep;

	/* in place: a shrink to at least half, a growth within the usable
	 * size (the room a growing block got, below); a block over
	 * SM_SMALL_MAX never becomes a small one in place */
	if (ref.slab && !sm_is_run(ref.slab))
		keep = size <= usable && (size >= usable / 2 || sm_size_class(size) == ref.slab->cls);
	else
		keep = size <= usable && size > SM_SMALL_MAX && size >= usable / 2;
	if (keep) {
		/* what the caller gave up must not stay behind */
		if (size < usable)
			sm_zero_tail(&ref, (unsigned char *)p + size, usable - size);
		return p;
	}
	void *n = NULL;
	if (size > usable) {
		/* a growing block gets room to grow in place (its usable size);
		 * without memory for that, exactly what was asked */
		size_t room = sm_grow_room(size);
		if (room > size) {
			int e = errno;
			sm_failure_quiet++;
			n = secretmem_malloc(room);
			sm_failure_quiet--;
			if (!n)
				errno = e;
		}
	}
	if (!n && !(n = secretmem_malloc(size)))
		return NULL;
	sm_copy_ready(&ref, n, p, size < usable ? size : usable); /* no SIMD register */
	secretmem_free(p);
	return n;
}

SM_API char *secretmem_strndup(const char *s, size_t n)
{
	size_t len = sm_strnlen(s, n); /* no SIMD register holds the string */
	char *d = secretmem_malloc(len + 1);

	if (!d)
		return NULL;
	sm_copy(d, s, len);
	d[len] = '\0';
	return d;
}

SM_API char *secretmem_strdup(const char *s)
{
	return secretmem_strndup(s, SIZE_MAX);
}

SM_API size_t secretmem_usable_size(const void *p)
{
	struct blockref ref;

	if (!p)
		return 0;
	must_be_live(p, &ref);
	return ref.usable;
}

SM_API int secretmem_owns(const void *p)
{
	struct blockref ref;

	return p && sm_lookup(p, &ref) == LOOKUP_OK;
}

SM_API long secretmem_trim(void)
{
	int err = sm_alloc_start();

	if (err)
		return -err;
	sm_gate_check();
	if (sm_tls_tc)
		sm_tcache_flush_all(sm_tls_tc);
	size_t freed = sm_release_unused();
	return freed > (size_t)LONG_MAX ? LONG_MAX : (long)freed;
}

/* ---- for the heap module (heap/heap.c) ------------------------------------ */

/* free(p) of the heap module and of the preload module's mode all: one
 * lookup on the fast path.  p in memory of ours (sm_in_our_memory): freed
 * as by secretmem_free (fatal for a double or interior free, and for a
 * stale pointer into pages a trim gave back), 1; foreign: untouched, 0. */
int sm_free_if_ours(void *p)
{
	struct tcache *tc = sm_tls_tc;
	unsigned idx;
	struct slab *s = SM_LIKELY(tc != NULL) ? lookup_slot(tc, p, &idx) : sm_lookup_slot(p, &idx);

	if (SM_LIKELY(s && tc && !sm_is_run(s))) {
		free_small(tc, p, s, idx);
		return 1;
	}
	if (s && sm_is_run(s)) {
		free_run(p, s);
		return 1;
	}
	if (!sm_in_our_memory(p))
		return 0;
	free_slow(p);
	return 1;
}

/* secretmem_free without making a cache for this thread. */
void sm_free_nocache(void *p)
{
	struct blockref ref;

	must_be_live(p, &ref);
	free_block(sm_tls_tc, p, &ref);
}
