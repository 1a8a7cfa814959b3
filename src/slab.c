/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * slab.c - size classes, chunks, slabs, arenas and large blocks; see slab.h.
 *
 * Locks, always taken in this order:
 *   arena locks (by index)  ->  large_lock  ->  pages_lock  ->  meta_lock,
 *   radix_lock, and the region layer's list lock inside region_create/destroy.
 * The fast paths of alloc.c take none of them: they use a thread cache and
 * the lock-free radix map, and touch a slot's state byte only while they own
 * the slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include "annotate.h"
#include "slab.h"

/* ---- size classes ------------------------------------------------------ */

/*
 * Exact steps of 4 bytes up to 32 and then four classes per power of two:
 * the worst internal waste for a request of 16 bytes or more is under 25 %
 * (17 -> 20 wastes 15 %, 33 -> 40 17.5 %, 129 -> 160 19.4 %).
 */
const uint32_t sm_class_size[SM_NCLASS] = {
	16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
	1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
	5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384,
};
_Static_assert(sizeof(sm_class_size) / sizeof(sm_class_size[0]) == SM_NCLASS, "class table");

/* size -> class: by 4-byte steps up to 1024, 256-byte steps to 16 KiB */
uint8_t sm_class_by4[1024 / 4 + 1];
uint8_t sm_class_by256[SM_SMALL_MAX / 256 + 1];
#define class_by4 sm_class_by4
#define class_by256 sm_class_by256
static uint16_t slab_pages[SM_NCLASS], slab_slots[SM_NCLASS];

static void init_classes(size_t ps)
{
	unsigned c = 0;

	for (size_t i = 0; i <= 1024 / 4; i++) {
		while (sm_class_size[c] < i * 4)
			c++;
		class_by4[i] = (uint8_t)c;
	}
	c = 0;
	for (size_t i = 0; i <= SM_SMALL_MAX / 256; i++) {
		while (sm_class_size[c] < i * 256)
			c++;
		class_by256[i] = (uint8_t)c;
	}
	/* the fewest pages (1..8) whose tail waste is at most 1/8 of the slab,
	 * else the least wasteful of them */
	for (c = 0; c < SM_NCLASS; c++) {
		size_t best = 1, best_waste = SIZE_MAX;
		for (size_t n = 1; n <= 8; n++) {
			size_t bytes = n * ps, slots = bytes / sm_class_size[c];
			if (slots == 0 || slots > UINT16_MAX)
				continue;
			size_t waste = bytes - slots * sm_class_size[c];
			if (waste * 8 <= bytes) {
				best = n;
				break;
			}
			if (waste * 1000 / bytes < best_waste) {
				best_waste = waste * 1000 / bytes;
				best = n;
			}
		}
		slab_pages[c] = (uint16_t)best;
		slab_slots[c] = (uint16_t)(best * ps / sm_class_size[c]);
	}
}

/* ---- zeroing ----------------------------------------------------------- */

void sm_zero(void *p, size_t len)
{
	memset(p, 0, len);
	__asm__ __volatile__("" : : "r"(p) : "memory"); /* not a dead store */
}

/*
 * The write-after-free check: whether len bytes at p, a freed slot or a
 * sample of a freed run about to be handed out again, are all zero.  It
 * reads only memory the allocator zeroed (a non-zero byte is fatal), never
 * a live secret, so vector registers are fine here, unlike in nosimd.c's
 * copies: 32 bytes per load, two accumulators, with AVX2 where the CPU has
 * it (the 16 KiB class is checked four times faster than with 8-byte words).
 */
typedef uint64_t sm_vec __attribute__((vector_size(32), may_alias, aligned(1)));

static inline __attribute__((always_inline)) int is_zero_body(const unsigned char *p, size_t len)
{
	sm_vec a = { 0, 0, 0, 0 }, b = { 0, 0, 0, 0 };
	size_t i = 0;

	if (len < 32) {
		uint64_t w = 0;
		for (; i + 8 <= len; i += 8)
			w |= *(const sm_word *)(const void *)(p + i);
		for (; i < len; i++)
			w |= p[i];
		return w == 0;
	}
	for (; i + 64 <= len; i += 64) {
		a |= *(const sm_vec *)(const void *)(p + i);
		b |= *(const sm_vec *)(const void *)(p + i + 32);
	}
	if (i + 32 <= len)
		a |= *(const sm_vec *)(const void *)(p + i);
	/* the last 32 bytes, overlapping what was read */
	b |= *(const sm_vec *)(const void *)(p + len - 32);
	a |= b;
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

static int is_zero_generic(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static int have_avx2;

__attribute__((target("avx2"))) static int is_zero_avx2(const unsigned char *p, size_t len)
{
	return is_zero_body(p, len);
}

static void zero_check_init(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2") != 0;
}

int sm_is_zero(const void *p, size_t len)
{
	return have_avx2 ? is_zero_avx2(p, len) : is_zero_generic(p, len);
}
#else
static void zero_check_init(void)
{
}

int sm_is_zero(const void *p, size_t len)
{
	return is_zero_generic(p, len);
}
#endif

/* ---- metadata memory (ordinary anonymous memory) ----------------------- */

#define META_BLOCK ((size_t)256 << 10)
#define META_MIN_SHIFT 6 /* 64 bytes */
#define META_NPOOLS 12   /* up to 128 KiB */

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static void *meta_free[META_NPOOLS];
static unsigned char *meta_cur;
static size_t meta_left;

static unsigned meta_pool(size_t size)
{
	unsigned k = 0;

	while (((size_t)1 << (k + META_MIN_SHIFT)) < size)
		k++;
	return k;
}

static void *meta_alloc(size_t size)
{
	unsigned k = meta_pool(size);
	size_t sz = (size_t)1 << (k + META_MIN_SHIFT);
	void *p = NULL;
	int fresh = 0;

	if (k >= META_NPOOLS)
		return NULL;
	pthread_mutex_lock(&meta_lock);
	if (meta_free[k]) {
		p = meta_free[k];
		meta_free[k] = *(void **)p;
	} else {
		fresh = 1;
		if (meta_left < sz) {
			void *blk;
			if (os_map_anon(META_BLOCK, &blk) == 0) {
				meta_cur = blk;
				meta_left = META_BLOCK;
			}
		}
		if (meta_left >= sz) {
			p = meta_cur;
			meta_cur += sz;
			meta_left -= sz;
		}
	}
	pthread_mutex_unlock(&meta_lock);
	/* fresh memory is zero from the mmap: clearing it would fault in
	 * pages nobody touches (a chunk's page_slab array for 16 pages) */
	if (p && !fresh)
		memset(p, 0, sz);
	return p;
}

/* meta_lock held */
static void meta_put(void *p, size_t size)
{
	unsigned k = meta_pool(size);

	*(void **)p = meta_free[k];
	meta_free[k] = p;
}

static void meta_release(void *p, size_t size)
{
	pthread_mutex_lock(&meta_lock);
	meta_put(p, size);
	pthread_mutex_unlock(&meta_lock);
}

void *sm_meta_alloc(size_t size)
{
	return meta_alloc(size);
}

void sm_meta_free(void *p, size_t size)
{
	if (p)
		meta_release(p, size);
}

/* ---- radix map: 2 MiB granule -> owner ---------------------------------- */

struct large {
	struct owner own;
	int state; /* SLOT_LIVE or SLOT_CACHED */
	struct large *next;
	struct region reg;
	unsigned char *ptr;
	size_t usable;
};

struct owner *_Atomic *_Atomic sm_radix[SM_RADIX_L1_SIZE];
#define radix sm_radix
atomic_ulong sm_radix_gen;
static pthread_mutex_t radix_lock = PTHREAD_MUTEX_INITIALIZER;

static struct owner *radix_get(uintptr_t a)
{
	if (a >> SM_ADDR_BITS)
		return NULL;
	size_t g = a >> SM_GRANULE_SHIFT;
	struct owner *_Atomic *leaf = atomic_load_explicit(&radix[g >> SM_RADIX_L2_BITS], memory_order_acquire);
	if (!leaf)
		return NULL;
	return atomic_load_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], memory_order_acquire);
}

/* Point every granule of [start, start+len) at o (NULL to clear). */
static int radix_set(uintptr_t start, size_t len, struct owner *o)
{
	int rc = 0;

	if ((start + len - 1) >> SM_ADDR_BITS)
		return -ENOMEM; /* beyond the 47-bit user space we index */
	pthread_mutex_lock(&radix_lock);
	for (uintptr_t a = start; a < start + len; a += SM_GRANULE) {
		size_t g = a >> SM_GRANULE_SHIFT;
		struct owner *_Atomic *leaf = atomic_load_explicit(&radix[g >> SM_RADIX_L2_BITS], memory_order_relaxed);
		if (!leaf) {
			void *mem;
			if (!o)
				continue;
			rc = os_map_anon(SM_RADIX_L2_SIZE * sizeof(*leaf), &mem);
			if (rc)
				break;
			leaf = mem;
			atomic_store_explicit(&radix[g >> SM_RADIX_L2_BITS], leaf, memory_order_release);
		}
		atomic_store_explicit(&leaf[g & (SM_RADIX_L2_SIZE - 1)], o, memory_order_release);
	}
	if (!o) /* an owner left: every thread's record of a chunk is stale */
		atomic_fetch_add_explicit(&sm_radix_gen, 1, memory_order_release);
	pthread_mutex_unlock(&radix_lock);
	return rc;
}

static void radix_clear_all(void)
{
	for (size_t i = 0; i < SM_RADIX_L1_SIZE; i++) {
		struct owner *_Atomic *leaf = atomic_load_explicit(&radix[i], memory_order_relaxed);
		if (leaf)
			for (size_t j = 0; j < SM_RADIX_L2_SIZE; j++)
				atomic_store_explicit(&leaf[j], NULL, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&sm_radix_gen, 1, memory_order_release);
}

/* ---- counters ---------------------------------------------------------- */

static struct {
	atomic_size_t mapped_bytes, regions, regions_created, pages_faulted, pages_released;
	atomic_size_t large_live, large_bytes;
	atomic_size_t run_live, run_bytes; /* written under pages_lock only */
} ctr;

/* A counter only written under one lock: no locked instruction needed. */
static inline void ctr_locked_add(atomic_size_t *c, size_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v, memory_order_relaxed);
}

void sm_counters_get(struct sm_counters *c)
{
	c->mapped_bytes = atomic_load(&ctr.mapped_bytes);
	c->regions = atomic_load(&ctr.regions);
	c->regions_created = atomic_load(&ctr.regions_created);
	c->pages_faulted = atomic_load(&ctr.pages_faulted);
	c->pages_released = atomic_load(&ctr.pages_released);
	c->large_live = atomic_load(&ctr.large_live) + atomic_load(&ctr.run_live);
	c->large_bytes = atomic_load(&ctr.large_bytes) + atomic_load(&ctr.run_bytes);
}

size_t sm_page_shift;
static size_t page_size;
#define page_shift sm_page_shift
/* smallest chunk (pages) refused for lack of memory since the last release */
static atomic_size_t refused_pages = SIZE_MAX;

/* Create a region for the allocator and count it. */
static int new_region(struct region *r, size_t size, int populate, struct owner *o)
{
	int rc = region_create(r, size, SM_GRANULE, populate, 0);

	if (rc)
		return rc;
	rc = radix_set(r->base, r->total, o);
	if (rc) {
		radix_set(r->base, r->total, NULL);
		region_destroy(r);
		return rc;
	}
	atomic_fetch_add(&ctr.mapped_bytes, r->size);
	atomic_fetch_add(&ctr.regions, 1);
	atomic_fetch_add(&ctr.regions_created, 1);
	atomic_fetch_add(&ctr.pages_faulted, r->faulted >> page_shift);
	return 0;
}

static void end_region(struct region *r)
{
	refused_pages = SIZE_MAX; /* budget came back: try any size again */
	atomic_fetch_sub(&ctr.mapped_bytes, r->size);
	atomic_fetch_sub(&ctr.regions, 1);
	atomic_fetch_add(&ctr.pages_released, r->faulted >> page_shift);
	radix_set(r->base, r->total, NULL);
	SM_SHOW(r->data, r->faulted); /* region_destroy zeroizes it */
	region_destroy(r);
}

static int fault_to(struct region *r, size_t upto)
{
	size_t before = r->faulted;
	int rc = region_fault_to(r, upto);

	if (!rc && r->faulted > before)
		atomic_fetch_add(&ctr.pages_faulted, (r->faulted - before) >> page_shift);
	return rc;
}

/* ---- chunks ------------------------------------------------------------ */

#define FAULT_AHEAD_MAX 32 /* pages faulted from the kernel side beyond the need, at most */
#define FIRST_CHUNK_PAGES 16
#define SECOND_CHUNK_PAGES 256 /* and a granule from the third on */

static pthread_mutex_t pages_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk chunk_list = { .next = &chunk_list, .prev = &chunk_list };

static size_t chunk_max_pages(void)
{
	size_t n = (SM_GRANULE >> page_shift) - 2; /* two guard pages */
	return n < SM_CHUNK_MAX_PAGES ? n : SM_CHUNK_MAX_PAGES;
}

/* Under pages_lock: a new chunk of at least need pages.  populate: exactly
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
static int chunk_create(size_t need, int populate, struct chunk **out)
{
	size_t maxp = chunk_max_pages();
	/* by the chunks on the list: none, one, or more */
	int none = chunk_list.next == &chunk_list, one = !none && chunk_list.next->next == &chunk_list;
	size_t want = populate ? need : none ? FIRST_CHUNK_PAGES : one ? SECOND_CHUNK_PAGES : maxp;
	int rc = -ENOMEM;

	if (want > maxp)
		want = maxp;
	/* under a memory-lock limit a chunk takes at most a quarter of what
	 * is left of it, so that a small limit (ulimit -l 64) keeps room for
	 * regions and for the next chunks */
	int unlimited;
	size_t limit, locked;
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (!unlimited) {
		size_t left = limit > locked ? (limit - locked) >> page_shift : 0;
		if (want > left / 4)
			want = left / 4;
	}
	/* at the memory-lock limit every try costs half a dozen system
	 * calls: start below the last refused size instead of halving down
	 * to it again (need itself is always tried: the limit may have been
	 * raised, or memory unlocked elsewhere) */
	if (want >= refused_pages)
		want = refused_pages / 2;
	if (want < need)
		want = need;
	struct chunk *c = meta_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->own.kind = OWNER_CHUNK;
	for (;;) {
		rc = new_region(&c->reg, want << page_shift, populate, &c->own);
		if (rc != -ENOMEM || want == need)
			break;
		refused_pages = want;
		want = want / 2 > need ? want / 2 : need;
	}
	if (rc) {
		if (rc == -ENOMEM && want < refused_pages)
			refused_pages = want;
		meta_release(c, sizeof(*c));
		return rc;
	}
	c->npages = (uint32_t)want;
	c->next = &chunk_list;
	c->prev = chunk_list.prev;
	chunk_list.prev->next = c;
	chunk_list.prev = c;
	*out = c;
	return 0;
}

static int page_used(const struct chunk *c, size_t i)
{
	return (int)((c->pagemap[i / 64] >> (i % 64)) & 1);
}

static void mark_pages(struct chunk *c, size_t first, size_t n, int used)
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
static long find_pages(const struct chunk *c, size_t n)
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
		if (page_used(c, i)) {
			run = 0;
			continue;
		}
		if (++run == n)
			return (long)(i + 1 - n);
	}
	return -1;
}

/*
 * Under pages_lock: pages [0, end) of c faulted in.  When new pages are
 * faulted from user space (the mmap-time regime, see sm_fault_regime):
 * exactly those, as there are no system calls to amortize and each page
 * faulted ahead may never be used.  From the kernel side (a read per call),
 * and for the fallback backend (an mlock per call):
 * ahead of the need by as many pages as the chunk has faulted so far
 * (1, 2, 4, ... up to FAULT_AHEAD_MAX), so that a program that needs one
 * page pays for one (each first touch of a secret page costs tens of
 * microseconds) and a growing one makes few system calls; exactly what is
 * needed if the memory-lock budget refuses the batch.
 */
static int fault_pages(struct chunk *c, size_t endpage)
{
	size_t end = endpage << page_shift, have = c->reg.faulted;
	int rc = 0;

	if (end > have && c->reg.backend == SECRETMEM_BACKEND_SECRET && sm_fault_regime() == SM_REGIME_MMAP) {
		rc = fault_to(&c->reg, end);
	} else if (end > have) {
		size_t ahead = have < ((size_t)FAULT_AHEAD_MAX << page_shift) ? have
									   : (size_t)FAULT_AHEAD_MAX << page_shift;
		size_t batch = end + ahead;
		if (batch > c->reg.size)
			batch = c->reg.size;
		rc = fault_to(&c->reg, batch);
		if (rc && batch > end)
			rc = fault_to(&c->reg, end);
	}
	return rc;
}

static int run_evict_one(void);

/* Under pages_lock: n pages, faulted in; secret_only: not in fallback
 * memory.  Free runs kept for reuse go back to the chunks' pages before a
 * new chunk is made. */
static int take_pages(size_t n, struct chunk **outc, size_t *first, int secret_only)
{
	struct chunk *c;
	long at = -1;
	int rc;

	for (;;) {
		for (c = chunk_list.next; c != &chunk_list; c = c->next) {
			if (secret_only && c->reg.backend != SECRETMEM_BACKEND_SECRET)
				continue;
			at = find_pages(c, n);
			if (at >= 0)
				break;
		}
		if (at >= 0 || !run_evict_one())
			break;
	}
	if (at < 0) {
		rc = chunk_create(n, 0, &c);
		if (rc)
			return rc;
		at = 0;
	}
	rc = fault_pages(c, (size_t)at + n);
	if (rc)
		return rc;
	mark_pages(c, (size_t)at, n, 1);
	*outc = c;
	*first = (size_t)at;
	return 0;
}

static int reserve(size_t bytes)
{
	size_t pages = (bytes + page_size - 1) >> page_shift, maxp = chunk_max_pages();
	int rc = 0;

	pthread_mutex_lock(&pages_lock);
	while (pages > 0 && !rc) {
		size_t n = pages < maxp ? pages : maxp;
		struct chunk *c;
		rc = chunk_create(n, 1, &c);
		pages -= n;
	}
	pthread_mutex_unlock(&pages_lock);
	return rc;
}

int sm_reserve(size_t bytes)
{
	int old = sm_cancel_off(), rc = reserve(bytes);

	sm_cancel_restore(old);
	return rc;
}

/* ---- arenas and slabs ---------------------------------------------------- */

#define NARENAS 8

struct arena {
	pthread_mutex_t lock;
	struct slab *partial[SM_NCLASS]; /* slabs with FREE slots */
	uint16_t nempty[SM_NCLASS];      /* empty slabs kept per class */
} __attribute__((aligned(64)));

static struct arena arenas[NARENAS];

unsigned sm_narenas(void)
{
	return NARENAS;
}

struct arena *sm_arena(unsigned i)
{
	return &arenas[i % NARENAS];
}

static size_t slab_meta_size(unsigned nslots)
{
	return sizeof(struct slab) + ((nslots + 63) / 64) * 8 + nslots;
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
	unsigned nslots = slab_slots[cls], npages = slab_pages[cls];
	struct slab *s = meta_alloc(slab_meta_size(nslots));
	struct chunk *c;
	size_t first;

	if (!s)
		return -ENOMEM;
	pthread_mutex_lock(&pages_lock);
	int rc = take_pages(npages, &c, &first, secret_only);
	if (!rc) {
		s->arena = a;
		s->chunk = c;
		s->start = c->reg.data + (first << page_shift);
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
		SM_HIDE(s->start, (size_t)npages << page_shift);
		for (size_t i = 0; i < npages; i++)
			atomic_store_explicit(&c->page_slab[first + i], s, memory_order_release);
	}
	pthread_mutex_unlock(&pages_lock);
	if (rc) {
		meta_release(s, slab_meta_size(nslots));
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
	pthread_mutex_lock(&pages_lock);
	for (size_t i = 0; i < s->npages; i++)
		atomic_store_explicit(&c->page_slab[s->first_page + i], NULL, memory_order_release);
	mark_pages(c, s->first_page, s->npages, 0);
	pthread_mutex_unlock(&pages_lock);
	meta_release(s, slab_meta_size(s->nslots));
}

int sm_slab_fallback(const struct slab *s)
{
	return s->chunk->reg.backend != SECRETMEM_BACKEND_SECRET;
}

static int arena_take(struct arena *a, unsigned cls, struct slotref *out, unsigned want, int secret_only)
{
	unsigned got = 0;

	pthread_mutex_lock(&a->lock);
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
			pthread_mutex_lock(&a->lock);
			held = a;
		}
		give_one(a, &refs[k]);
	}
	if (held)
		pthread_mutex_unlock(&held->lock);
}

/* ---- lookup -------------------------------------------------------------- */

int sm_lookup(const void *p, struct blockref *ref)
{
	uintptr_t a = (uintptr_t)p;
	struct owner *o = radix_get(a);

	ref->slab = NULL;
	ref->large = NULL;
	if (!o)
		return LOOKUP_FOREIGN;
	if (o->kind == OWNER_LARGE) {
		struct large *l = (struct large *)o;
		if (a < (uintptr_t)l->reg.data || a >= (uintptr_t)l->reg.data + l->reg.size)
			return LOOKUP_FOREIGN;
		if (a != (uintptr_t)l->ptr)
			return LOOKUP_INTERIOR;
		ref->large = l;
		ref->usable = l->usable;
		return __atomic_load_n(&l->state, __ATOMIC_ACQUIRE) == SLOT_LIVE ? LOOKUP_OK : LOOKUP_NOT_LIVE;
	}
	struct chunk *c = (struct chunk *)o;
	if (a < (uintptr_t)c->reg.data)
		return LOOKUP_FOREIGN;
	size_t pg = (a - (uintptr_t)c->reg.data) >> page_shift;
	if (pg >= c->npages)
		return LOOKUP_FOREIGN;
	struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_acquire);
	if (!s)
		return LOOKUP_FOREIGN;
	uint64_t off = a - (uintptr_t)s->start;
	unsigned i = (unsigned)((off * s->inv) >> 40);
	if ((uint64_t)i * s->size != off || i >= s->nslots)
		return LOOKUP_INTERIOR;
	ref->slab = s;
	ref->idx = i;
	ref->usable = s->size;
	uint8_t st = atomic_load_explicit((_Atomic uint8_t *)&s->state[i], memory_order_relaxed);
	return st == SLOT_LIVE ? LOOKUP_OK : LOOKUP_NOT_LIVE;
}

/* Whether p lies in memory of ours (a chunk's pages, a large block's
 * region), whatever is there now: a live block, a freed one, or pages a
 * trim or an eviction gave back to the chunk.  Such an address is never
 * another allocator's. */
int sm_in_our_memory(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct owner *o = radix_get(a);

	if (!o)
		return 0;
	if (o->kind == OWNER_LARGE) {
		const struct large *l = (const struct large *)o;
		return a >= (uintptr_t)l->reg.data && a < (uintptr_t)l->reg.data + l->reg.size;
	}
	const struct chunk *c = (const struct chunk *)o;
	return a >= (uintptr_t)c->reg.data && a - (uintptr_t)c->reg.data < ((size_t)c->npages << page_shift);
}

/* ---- runs: large blocks in chunk pages ----------------------------------- */

/*
 * A block above SM_SMALL_MAX and up to the largest run class is a run: a
 * 1-slot slab of whole pages of a chunk.  Page counts come in four classes
 * per doubling (5, 6, 7, 8, 10, 12, 14, 16, 20, ... pages with 4 KiB pages:
 * at most 25 % more pages than needed).  The block's end touches the page
 * above the run, an inaccessible guard page; the page below the run is a
 * guard page too.  Neighbouring runs share a guard page (guard_ref counts
 * its runs), the chunk's own inaccessible neighbours serve at its ends, and
 * the protection is set once, when the run is carved, and restored when its
 * last run goes back to the chunk's free pages: nothing per allocation.
 *
 * A freed run is zeroed (from the page holding the block's start to the
 * end) and kept on its class's list for the next block of that class, so
 * steady churn maps nothing and faults nothing.  Kept runs past
 * RUN_CACHE_BYTES, or when pages are needed for a slab or another run, or
 * at secretmem_trim(), go back to the chunk's free pages (oldest first);
 * the chunk itself goes when none of its pages is used.
 *
 * Each guard page splits the chunk's mapping (up to two more VMAs): past
 * run_guard_limit guard pages, runs are carved without guard pages, so a
 * heap of any size stays far below vm.max_map_count (65530 by default).
 *
 * All run state is under pages_lock; a run's state byte is written with an
 * atomic step by its owner (free) as for slots.
 */

#define RUN_MAX_BYTES ((size_t)1 << 20)
#define RUN_NCLASS_MAX 64
#define RUN_CACHE_BYTES ((size_t)16 << 20)
#define RUN_GUARDS_DEFAULT 8192 /* at most ~16,400 extra VMAs */
#define SAMPLE 64               /* bytes checked at each sampled place */

static unsigned run_nclass;
static uint16_t run_class_pages[RUN_NCLASS_MAX];
static uint8_t run_class_of[SM_CHUNK_MAX_PAGES + 1]; /* pages -> class */
static size_t run_max_pages;
static struct slab *run_free_head[RUN_NCLASS_MAX];   /* kept free runs */
static struct slab *lru_head, *lru_tail;
static size_t run_cached_bytes, run_guards, run_guard_limit = RUN_GUARDS_DEFAULT;

static void init_runs(size_t ps)
{
	size_t minp = (SM_SMALL_MAX + 16 + ps - 1) / ps, cap = RUN_MAX_BYTES / ps;
	size_t room = chunk_max_pages() - 2;

	if (cap > room)
		cap = room;
	run_nclass = 0;
	for (size_t p = minp; p <= cap && run_nclass < RUN_NCLASS_MAX; p++) {
		unsigned bits = 64u - (unsigned)__builtin_clzll(p), k = bits > 3 ? bits - 3 : 0;
		if ((p & (((size_t)1 << k) - 1)) == 0)
			run_class_pages[run_nclass++] = (uint16_t)p;
	}
	run_max_pages = run_nclass ? run_class_pages[run_nclass - 1] : 0;
	for (size_t p = 0, c = 0; p <= run_max_pages; p++) {
		while (run_class_pages[c] < p)
			c++;
		run_class_of[p] = (uint8_t)c;
	}
}

size_t sm_run_guard_limit(size_t n)
{
	pthread_mutex_lock(&pages_lock);
	size_t old = run_guard_limit;
	run_guard_limit = n ? n : RUN_GUARDS_DEFAULT;
	pthread_mutex_unlock(&pages_lock);
	return old;
}

size_t sm_run_guards(void)
{
	pthread_mutex_lock(&pages_lock);
	size_t n = run_guards;
	pthread_mutex_unlock(&pages_lock);
	return n;
}

static int is_guard(const struct chunk *c, size_t pg)
{
	return c->guard_ref[pg] != 0;
}

/* Under pages_lock: make page pg of c a guard page for one more run (set
 * PROT_NONE if it was a free page).  1 if it is a guard page now. */
static int guard_get(struct chunk *c, size_t pg)
{
	if (c->guard_ref[pg] == 0) {
		if (run_guards >= run_guard_limit)
			return 0;
		if (os_protect(c->reg.data + (pg << page_shift), page_size, PROT_NONE))
			return 0; /* e.g. vm.max_map_count reached: unguarded */
		mark_pages(c, pg, 1, 1);
		run_guards++;
	}
	c->guard_ref[pg]++;
	return 1;
}

/* Under pages_lock: one run less next to guard page pg; the last one gives
 * the page back (protect: restore its access; 0 in a fork child, whose copy
 * is accessible everywhere). */
static void guard_put(struct chunk *c, size_t pg, int protect)
{
	if (--c->guard_ref[pg])
		return;
	run_guards--;
	if (protect && os_protect(c->reg.data + (pg << page_shift), page_size, PROT_READ | PROT_WRITE))
		return; /* the page stays out of use */
	mark_pages(c, pg, 1, 0);
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
		if (page_used(c, i)) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < np && !page_used(c, j))
			j++;
		/* free pages [i, j) */
		int lo_ok = i == 0 || is_guard(c, i - 1), hi_ok = j == np || is_guard(c, j);
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
	return slab_meta_size(1);
}

static void run_unlink_cached(struct slab *s)
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
	run_cached_bytes -= (size_t)s->npages << page_shift;
}

/* Under pages_lock: the run's pages (all zero) go back to its chunk.
 * protect 0: in a fork child, every lock already held (fork.c). */
static void run_release(struct slab *s, int protect)
{
	struct chunk *c = s->chunk;

	for (size_t i = 0; i < s->npages; i++)
		atomic_store_explicit(&c->page_slab[s->first_page + i], NULL, memory_order_release);
	mark_pages(c, s->first_page, s->npages, 0);
	if (s->glo)
		guard_put(c, s->first_page - 1u, protect);
	if (s->ghi)
		guard_put(c, (size_t)s->first_page + s->npages, protect);
	if (protect)
		meta_release(s, run_meta_size());
	else
		meta_put(s, run_meta_size());
}

/* Under pages_lock: give the oldest kept run back to its chunk; 0 if none. */
static int run_evict_one(void)
{
	struct slab *s = lru_tail;

	if (!s)
		return 0;
	run_unlink_cached(s);
	run_release(s, 1);
	return 1;
}

/* Under pages_lock: carve a new run of class rc (faulted in, guarded if
 * the guard budget allows). */
static int run_carve(unsigned rc, int secret_only, struct slab **out)
{
	size_t n = run_class_pages[rc];
	int guarded = run_guards + 2 <= run_guard_limit;
	struct chunk *c;
	long at = -1;
	int err;

	for (;;) {
		for (c = chunk_list.next; c != &chunk_list; c = c->next) {
			if (secret_only && c->reg.backend != SECRETMEM_BACKEND_SECRET)
				continue;
			at = guarded ? find_run(c, n) : find_pages(c, n);
			if (at >= 0)
				break;
		}
		if (at >= 0 || !run_evict_one())
			break;
	}
	if (at < 0) {
		err = chunk_create(n + 1, 0, &c); /* room for the guard above */
		if (err)
			return err;
		at = 0;
	}
	size_t first = (size_t)at, end = first + n;
	err = fault_pages(c, end < c->npages ? end + 1 : end);
	if (err)
		return err;
	struct slab *s = meta_alloc(run_meta_size());
	if (!s)
		return -ENOMEM;
	s->chunk = c;
	s->cls = (uint16_t)(SM_NCLASS + rc);
	s->nslots = 1;
	s->first_page = (uint16_t)first;
	s->npages = (uint16_t)n;
	s->freemap = s->storage;
	s->state = (uint8_t *)(s->storage + 1);
	mark_pages(c, first, n, 1);
	if (guarded) {
		s->glo = first > 0 && guard_get(c, first - 1);
		s->ghi = end < c->npages && guard_get(c, end);
	}
	SM_HIDE(c->reg.data + (first << page_shift), n << page_shift);
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&c->page_slab[first + i], s, memory_order_release);
	*out = s;
	return 0;
}

/* A cheap write-after-free check of a reused block (a run's, a kept
 * region's, a small slot above SM_CHECK_FULL_MAX): SAMPLE bytes at its start,
 * at its end, and at the start of each page that begins inside it. */
int sm_sample_zero(const void *block, size_t len)
{
	const unsigned char *p = block;
	size_t k = len < SAMPLE ? len : SAMPLE;

	if (!sm_is_zero(p, k) || !sm_is_zero(p + len - k, k))
		return 0;
	uintptr_t pg = ((uintptr_t)p + page_size - 1) & ~(uintptr_t)(page_size - 1);
	for (; pg + SAMPLE <= (uintptr_t)p + len; pg += page_size)
		if (!sm_is_zero((const void *)pg, SAMPLE))
			return 0;
	return 1;
}

static unsigned char *run_end(const struct slab *s)
{
	return s->chunk->reg.data + (((size_t)s->first_page + s->npages) << page_shift);
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
static int run_alloc(size_t use, size_t align, void **out, size_t *usable)
{
	size_t need = use + (align > 16 ? align - 16 : 0);
	size_t pages = (need + page_size - 1) >> page_shift;
	int secret_only = atomic_load_explicit(&sm_fallback_regions, memory_order_relaxed) &&
			  sm_option(SECRETMEM_OPT_REQUIRE);
	int err = 0;

	if (pages > run_max_pages)
		return -ENOSPC;
	unsigned rc = run_class_of[pages];
	pthread_mutex_lock(&pages_lock);
	struct slab *s = run_free_head[rc];
	while (s && secret_only && sm_slab_fallback(s))
		s = s->next;
	if (s) {
		run_unlink_cached(s); /* no system call: nothing to cancel */
	} else {
		/* cancellation off: a cancelled carve would leave the lock
		 * held or a new chunk unreachable */
		int old = sm_cancel_off();
		err = run_carve(rc, secret_only, &s);
		sm_cancel_restore(old);
	}
	if (!err) {
		ctr_locked_add(&ctr.run_live, 1);
		ctr_locked_add(&ctr.run_bytes, use);
	}
	pthread_mutex_unlock(&pages_lock);
	if (err)
		return err;
	unsigned char *end = run_end(s);
	unsigned char *start = (unsigned char *)(((uintptr_t)end - use) & ~((uintptr_t)align - 1));
	SM_SHOW(start, (size_t)(end - start));
	if (!sm_sample_zero(start, (size_t)(end - start)))
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
	unsigned char *from = (unsigned char *)((uintptr_t)s->start & ~(uintptr_t)(page_size - 1));
	size_t len = (size_t)(run_end(s) - from);
	SM_SHOW(from, len);
	sm_zero(from, len);
	SM_HIDE(from, len);
	unsigned rc = s->cls - SM_NCLASS;
	pthread_mutex_lock(&pages_lock);
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
	run_cached_bytes += (size_t)s->npages << page_shift;
	ctr_locked_add(&ctr.run_live, (size_t)-1);
	ctr_locked_add(&ctr.run_bytes, -size);
	while (run_cached_bytes > RUN_CACHE_BYTES && run_evict_one())
		;
	pthread_mutex_unlock(&pages_lock);
}

size_t sm_grow_room(size_t size)
{
	size_t cap = run_max_pages << page_shift;

	if (size >= cap)
		return size;
	size_t want = 2 * ((size + 15) & ~(size_t)15);
	if (want <= SM_SMALL_MAX)
		return sm_class_size[sm_size_class(want)];
	/* a small block stays small: room in a run would be lost, since a
	 * block over SM_SMALL_MAX never becomes a small one in place */
	if (size <= SM_SMALL_MAX)
		return SM_SMALL_MAX;
	if (want >= cap)
		return cap;
	return (size_t)run_class_pages[run_class_of[(want + page_size - 1) >> page_shift]] << page_shift;
}

/* ---- large blocks ---------------------------------------------------------- */

#define LARGE_CACHE_MAX 8
#define LARGE_CACHE_BYTES ((size_t)16 << 20)

/* Freed large blocks (own regions) kept for reuse, newest first; the
 * oldest go when there are more than LARGE_CACHE_MAX or LARGE_CACHE_BYTES. */
static pthread_mutex_t large_lock = PTHREAD_MUTEX_INITIALIZER;
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
		end_region(&l->reg);
		meta_release(l, sizeof(*l));
		l = next;
	}
}

/* Take every cached large block off the cache (to destroy outside the lock). */
static struct large *large_cache_take_all(void)
{
	pthread_mutex_lock(&large_lock);
	struct large *l = large_cache;
	large_cache = NULL;
	large_cached_n = 0;
	large_cached_bytes = 0;
	pthread_mutex_unlock(&large_lock);
	return l;
}

/* A new mapped large block of bytes in *out. */
static int new_large(size_t bytes, struct large **out)
{
	struct large *l = meta_alloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->own.kind = OWNER_LARGE;
	int rc = new_region(&l->reg, bytes, 1, &l->own);
	struct large *kept;
	if (rc == -ENOMEM && (kept = large_cache_take_all()) != NULL) {
		/* the kept blocks hold memory-lock budget: give it back */
		large_destroy_list(kept);
		rc = new_region(&l->reg, bytes, 1, &l->own);
	}
	if (rc)
		meta_release(l, sizeof(*l));
	else
		*out = l;
	return rc;
}

/* Cancellation is off only where a mapping is made (run_alloc, new_large):
 * a kept block is reused with no system call, so no cancellation point. */
int sm_large_alloc(size_t size, size_t align, void **out, size_t *usable)
{
	if (size > SIZE_MAX / 4 || align > SIZE_MAX / 4)
		return -ENOMEM;
	if (align < 16)
		align = 16;
	size_t use = (size + 15) & ~(size_t)15;
	if (align <= page_size) {
		int rc = run_alloc(use, align, out, usable);
		if (rc != -ENOSPC)
			return rc;
	}
	size_t bytes = (use + page_size - 1) & ~(page_size - 1);
	/* room to slide the block down to an alignment above a page */
	if (align > page_size)
		bytes += align - page_size;
	struct large *l = NULL;

	pthread_mutex_lock(&large_lock);
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
	pthread_mutex_unlock(&large_lock);
	if (l) {
		unsigned char *at = large_place(&l->reg, use, align), *end = l->reg.data + l->reg.size;
		SM_SHOW(at, (size_t)(end - at));
		if (!sm_sample_zero(at, (size_t)(end - at)))
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
	atomic_fetch_add(&ctr.large_live, 1);
	atomic_fetch_add(&ctr.large_bytes, use);
	*out = l->ptr;
	*usable = use;
	return 0;
}

void sm_large_free(struct large *l)
{
	int expected = SLOT_LIVE;

	if (!__atomic_compare_exchange_n(&l->state, &expected, SLOT_CACHED, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		sm_fatal("double free");
	atomic_fetch_sub(&ctr.large_live, 1);
	atomic_fetch_sub(&ctr.large_bytes, l->usable);
	/* the whole region: the slack before the block too */
	SM_SHOW(l->reg.data, l->reg.size);
	sm_zero(l->reg.data, l->reg.size);
	SM_HIDE(l->reg.data, l->reg.size);
	struct large *gone = NULL;
	pthread_mutex_lock(&large_lock);
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
	pthread_mutex_unlock(&large_lock);
	large_destroy_list(gone);
}

/* ---- release ------------------------------------------------------------ */

size_t sm_release_unused(void)
{
	size_t freed = 0;

	for (unsigned i = 0; i < NARENAS; i++) {
		struct arena *a = &arenas[i];
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
	for (struct large *l = large_cache_take_all(), *next; l; l = next) {
		next = l->next;
		l->next = NULL;
		freed += l->reg.faulted;
		large_destroy_list(l);
	}
	pthread_mutex_lock(&pages_lock);
	while (run_evict_one())
		;
	for (struct chunk *c = chunk_list.next, *next; c != &chunk_list; c = next) {
		next = c->next;
		if (c->used_pages)
			continue;
		c->prev->next = c->next;
		c->next->prev = c->prev;
		freed += c->reg.faulted;
		end_region(&c->reg);
		meta_release(c, sizeof(*c));
	}
	pthread_mutex_unlock(&pages_lock);
	return freed;
}

/* ---- fork (the policies live in fork.c) ---------------------------------- */

void sm_slab_fork_prepare(void)
{
	for (unsigned i = 0; i < NARENAS; i++)
		pthread_mutex_lock(&arenas[i].lock);
	pthread_mutex_lock(&large_lock);
	pthread_mutex_lock(&pages_lock);
	pthread_mutex_lock(&meta_lock);
	pthread_mutex_lock(&radix_lock);
}

void sm_slab_fork_parent(void)
{
	pthread_mutex_unlock(&radix_lock);
	pthread_mutex_unlock(&meta_lock);
	pthread_mutex_unlock(&pages_lock);
	pthread_mutex_unlock(&large_lock);
	for (unsigned i = NARENAS; i-- > 0;)
		pthread_mutex_unlock(&arenas[i].lock);
}

size_t sm_slab_fork_keep(const struct region *r)
{
	struct owner *o = radix_get(r->base);

	if (o && o->kind == OWNER_CHUNK && &((struct chunk *)o)->reg == r) {
		const struct chunk *c = (const struct chunk *)o;
		size_t last = 0; /* one past the highest page in a slab */
		for (size_t w = 0; w < SM_CHUNK_MAX_PAGES / 64; w++)
			if (c->pagemap[w])
				last = w * 64 + 64 - (size_t)__builtin_clzll(c->pagemap[w]);
		return last << page_shift;
	}
	if (o && o->kind == OWNER_LARGE && &((struct large *)o)->reg == r)
		return __atomic_load_n(&((const struct large *)o)->state, __ATOMIC_ACQUIRE) == SLOT_LIVE ? SIZE_MAX : 0;
	return SIZE_MAX;
}

int sm_slab_fork_guard(const struct region *r, size_t pg)
{
	struct owner *o = radix_get(r->base);

	if (!o || o->kind != OWNER_CHUNK || &((struct chunk *)o)->reg != r)
		return 0;
	const struct chunk *c = (const struct chunk *)o;
	return pg < c->npages && is_guard(c, pg);
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
	for (struct chunk *c = chunk_list.next; c != &chunk_list; c = c->next) {
		for (size_t pg = 0; pg < c->npages; pg++) {
			struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_relaxed);
			if (!s || s->first_page != pg)
				continue;
			if (sm_is_run(s)) {
				if (s->state[0] == SLOT_LIVE)
					continue;
				unsigned char *p = c->reg.data + (pg << page_shift);
				size_t len = (size_t)s->npages << page_shift;
				SM_SHOW(p, len);
				sm_zero(p, len);
				SM_HIDE(p, len);
				if (s->on_partial)
					run_unlink_cached(s);
				run_release(s, 0);
				continue;
			}
			for (unsigned i = 0; i < s->nslots; i++) {
				if (s->state[i] == SLOT_LIVE)
					continue;
				unsigned char *p = s->start + (size_t)i * s->size;
				SM_SHOW(p, s->size);
				sm_zero(p, s->size);
				SM_HIDE(p, s->size);
			}
		}
		for (size_t pg = 0; pg < c->npages; pg++)
			if (is_guard(c, pg) &&
			    os_protect(c->reg.data + (pg << page_shift), page_size, PROT_NONE))
				sm_warn("fork: could not set a guard page in the child", NULL, NULL);
	}
}

/* In a fork child, every lock held: the run counters, recounted from the
 * live runs.  A thread the fork caught between a run's state change and
 * its counter update under pages_lock does not exist in the child. */
void sm_slab_fork_recount(void)
{
	size_t live = 0, bytes = 0;

	for (struct chunk *c = chunk_list.next; c != &chunk_list; c = c->next)
		for (size_t pg = 0; pg < c->npages; pg++) {
			struct slab *s = atomic_load_explicit(&c->page_slab[pg], memory_order_relaxed);
			if (s && s->first_page == pg && sm_is_run(s) && s->state[0] == SLOT_LIVE) {
				live++;
				bytes += s->size;
			}
		}
	atomic_store(&ctr.run_live, live);
	atomic_store(&ctr.run_bytes, bytes);
}

/*
 * Drop policy, before the heap is forgotten: tell valgrind that the blocks
 * which went with the dropped pages are gone, or it reports each of them as
 * a leak of the child.  (A no-op when not under valgrind.)
 */
static void forget_live_blocks(void)
{
#ifdef SM_VALGRIND
	for (struct chunk *c = chunk_list.next; c != &chunk_list; c = c->next) {
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
		struct owner *_Atomic *leaf = atomic_load_explicit(&radix[i], memory_order_relaxed);
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
		scrub_free_slots();
		sm_slab_fork_recount();
		/* their pages were not copied (fork.c): give them back */
		cached = large_cache;
		large_cache = NULL;
		large_cached_n = large_cached_bytes = 0;
	}
	if (drop) {
		forget_live_blocks();
		/* the pages are gone (region layer); forget what was on them.
		 * Their metadata is left behind: it is not worth walking. */
		radix_clear_all();
		for (unsigned i = 0; i < NARENAS; i++) {
			memset(arenas[i].partial, 0, sizeof(arenas[i].partial));
			memset(arenas[i].nempty, 0, sizeof(arenas[i].nempty));
		}
		chunk_list.next = chunk_list.prev = &chunk_list;
		memset(run_free_head, 0, sizeof(run_free_head));
		lru_head = lru_tail = NULL;
		run_cached_bytes = run_guards = 0;
		large_cache = NULL;
		large_cached_n = large_cached_bytes = 0;
		atomic_store(&ctr.mapped_bytes, 0);
		atomic_store(&ctr.regions, 0);
		atomic_store(&ctr.large_live, 0);
		atomic_store(&ctr.large_bytes, 0);
		atomic_store(&ctr.run_live, 0);
		atomic_store(&ctr.run_bytes, 0);
	}
	/* the mutexes were taken by the forking thread, the only one here */
	sm_slab_fork_parent();
	while (cached) {
		struct large *next = cached->next;
		end_region(&cached->reg);
		meta_release(cached, sizeof(*cached));
		cached = next;
	}
}

int sm_slab_init(void)
{
	page_size = os_page_size();
	page_shift = (size_t)__builtin_ctzl(page_size);
	if (SM_GRANULE < 8 * page_size)
		return -ENOSYS; /* pages too large for 2 MiB chunks */
	for (unsigned i = 0; i < NARENAS; i++)
		pthread_mutex_init(&arenas[i].lock, NULL);
	zero_check_init();
	init_classes(page_size);
	init_runs(page_size);
	return 0;
}
