/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * fuzz_alloc.c - libFuzzer target for the secretmem allocator.
 *
 * The input is a program: every 4 bytes are one operation
 *
 *   byte 0  bits 0-3  operation (see enum below)
 *           bits 4-5  size mode: tiny (0..32), small (0..1024), a size class
 *                     boundary (class - 1, class, class + 1), any (0..2 MiB:
 *                     values below 0xc000 give 0..16400, up to 0xfeff
 *                     16401..64 KiB, the last 256 64 KiB..2 MiB)
 *           bits 6-7  a modifier (calloc element count, strndup limit,
 *                     alignment range, trim...)
 *   byte 1            slot (0..255): which of 256 block slots it acts on
 *   byte 2-3          little-endian 16-bit size value, shaped by the mode
 *
 * on up to 256 live blocks.  Every block holds a pattern derived from its id
 * (an 8-byte id tag, then a window of a fixed pseudo-random reference buffer
 * chosen by the id) over its whole usable size.  The target checks the
 * live blocks' patterns (see check_all) and the allocator's statistics
 * (live_allocations equals the number of live blocks, bytes_in_use equals
 * the sum of their usable sizes), and for each block the usable size rule
 * and the documented alignment.  New blocks must be all zero.  At the end of
 * an input every block is freed and the allocator must be back to zero.
 * OP_ALIGNED allocates with sm_alloc_aligned() (internal.h; the heap
 * module's memalign): alignments 1 B .. 2 MiB, and invalid ones.
 *
 * State across inputs: the allocator is not reinitialised per input (that
 * would create and fault fresh secret chunks every time); an input (and
 * each segment of it, see OP_RESET) starts from the canonical state "no
 * live block" (every block of the previous one freed, the statistics back
 * to zero, block ids from 1).  Trim runs only when an operation asks: a
 * trim per input made it 1.6-3 times slower (every input then faulted fresh
 * secret pages).  What carries over is the allocator's caches (empty
 * chunks and slabs, cached large runs): a failure that an input causes by
 * itself reproduces alone with -runs=1, and one that needs what earlier
 * inputs left there reproduces with the history file (history_add).
 * test/t_rel_fuzz_run checks both with injected failures.
 *
 * Any violation prints what went wrong and aborts, which libFuzzer reports
 * as a crash; ASan and UBSan watch the allocator's own code.
 *
 * Build: make fuzz (clang -fsanitize=fuzzer,address,undefined).
 * Run:   SECRETMEM_FUZZ_HISTORY=hist build/fuzz/fuzz_alloc -max_total_time=60 \
 *            -max_len=256 <scratch dir> fuzz/corpus
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h" /* sm_alloc_aligned */
#include "secretmem.h"

#define NSLOTS 256
#define MAX_SIZE ((size_t)2 << 20) /* 2 MiB */
#define MID_SIZE (64 * 1024)
#define WINDOWS 4093 /* a prime: the number of distinct pattern windows */
/* a block's usable size is at most MAX_SIZE + 16 (+ a page with sm_alloc_aligned) */
#define MAX_USABLE (MAX_SIZE + 8192)
#define REF_LEN (MAX_USABLE + WINDOWS)
#define TAG_MAGIC 0x5ec7e75ec7e7a11cull
#define ANY_SPLIT 0xc000u /* size mode "any": values below map to 0..ANY_SMALL */
#define ANY_SMALL 16400u  /* just past the largest size class, 16384 */
#define BIG_SPLIT 0xff00u /* values from here map to MID_SIZE..MAX_SIZE */
#define MAX_ALIGN ((size_t)2 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
static void history_open(const char *path);

enum fuzz_op {
	OP_MALLOC,
	OP_ALIGNED,
	OP_CALLOC,
	OP_FREE,
	OP_FREE2,
	OP_REALLOC,
	OP_REALLOC2,
	OP_STRDUP,
	OP_TRIM,
	OP_USABLE,
	OP_HUGE,
	OP_REFILL,
	OP_REUSE,
	OP_REALLOC0,
	OP_OWNS,
	OP_STATS,
};

struct block {
	unsigned char *p;
	size_t req;    /* size asked for */
	size_t usable; /* secretmem_usable_size() at allocation */
	uint64_t id;
};

static struct block slots[NSLOTS];
static size_t nlive, live_bytes;
static uint64_t next_id = 1;
static unsigned char ref[REF_LEN];
static unsigned char str_src[MID_SIZE + 1]; /* strdup source: no NUL inside */
static int ref_ready;
/* The slots in use, densely: live_list[0..nlive) and each one's index. */
static unsigned char live_list[NSLOTS];
static unsigned live_pos[NSLOTS];
static int inject; /* SECRETMEM_FUZZ_INJECT=1: see injected_failure() */

/*
 * The checks below are the harness's own loops over blocks and bytes: they
 * are kept out of the coverage instrumentation (libFuzzer traced every
 * comparison in them, a third of the time per input) so that the coverage
 * feedback is the allocator's.
 */
#define NOCOV __attribute__((no_sanitize("coverage")))

/* The size classes of the allocator (usable size of small blocks). */
static const unsigned classes[] = {
	16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224,
	256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336,
	16384,
};
#define NCLASSES (sizeof(classes) / sizeof(classes[0]))

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...);

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_alloc: invariant violated: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void init_ref(void)
{
	uint64_t s = 0x243f6a8885a308d3ull;

	for (size_t i = 0; i < REF_LEN; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		ref[i] = (unsigned char)(s >> 56);
	}
	for (size_t i = 0; i < MID_SIZE; i++)
		str_src[i] = (unsigned char)(ref[i] | 1);
	ref_ready = 1;
}

static const unsigned char *window(uint64_t id)
{
	return ref + (size_t)((id * 2654435761u) % WINDOWS);
}

#define PAGE 4096u

/* Smallest usable size the allocator may give for n bytes. */
static size_t expected_usable(size_t n)
{
	if (n <= classes[NCLASSES - 1]) {
		for (size_t i = 0; i < NCLASSES; i++)
			if (n <= classes[i])
				return classes[i];
	}
	return (n + 15) & ~(size_t)15;
}

static int is_class(size_t u)
{
	for (size_t i = 0; i < NCLASSES; i++)
		if (u == classes[i])
			return 1;
	return 0;
}

/*
 * The usable size rule.  A small request (<= 16 KiB) gets exactly its size
 * class (the documented table).  A large one at least its size rounded to
 * 16 and less than a page more (the block's end is at a guard page, and a
 * run of whole pages may serve it).  With sm_alloc_aligned (align != 0): a
 * size class at least the request, or a large block under the same rule
 * for max(request, 16385).
 */
static const char *usable_wrong(size_t req, size_t u, size_t align)
{
	size_t lo = expected_usable(req);

	if (u < req)
		return "less than requested";
	if (align) {
		if (is_class(u))
			return NULL;
		lo = expected_usable(req > classes[NCLASSES - 1] ? req : classes[NCLASSES - 1] + 1);
	} else if (req <= classes[NCLASSES - 1]) {
		return u == lo ? NULL : "not the size class";
	}
	if (u % 16)
		return "large, not a multiple of 16";
	if (u < lo || u - lo >= PAGE)
		return "large, not within a page of the request rounded to 16";
	return NULL;
}

/*
 * secretmem_realloc(3): a block that moves to grow has room to grow: the
 * usable size of twice the new size rounded to 16 (the class holding that,
 * at most the 16 KiB class for a small size, or above 16 KiB whole pages,
 * at least that and at most a quarter more),
 * 1 MiB for a new size from 512 KiB to 1 MiB, no room above; or, when the
 * room could not be had, the plain rule.
 */
static const char *room_wrong(size_t n, size_t u)
{
	size_t want = 2 * ((n + 15) & ~(size_t)15), mib = (size_t)1 << 20;

	if (!usable_wrong(n, u, 0) || n >= mib)
		return usable_wrong(n, u, 0);
	if (want >= mib)
		return u == mib ? NULL : "room: not 1 MiB";
	if (want <= classes[NCLASSES - 1])
		return u == expected_usable(want) ? NULL : "room: not the class of twice the size";
	if (n <= classes[NCLASSES - 1])
		return u == classes[NCLASSES - 1] ? NULL : "room: not the largest class (a small size)";
	size_t pages = (want + PAGE - 1) / PAGE * PAGE;
	if (u % PAGE || u < pages || u > pages + pages / 4)
		return "room: not the whole pages of twice the size";
	return NULL;
}

static size_t expected_align(size_t usable)
{
	size_t a = usable & (~usable + 1); /* largest power of two dividing it */
	return a > 16 || a == 0 ? 16 : a;
}

NOCOV static void fill(struct block *b)
{
	size_t n = b->usable;

	if (n >= 8) {
		uint64_t tag = b->id ^ TAG_MAGIC;
		memcpy(b->p, &tag, 8);
		memcpy(b->p + 8, window(b->id), n - 8);
	} else {
		memcpy(b->p, window(b->id), n);
	}
}

NOCOV static void check_block(const struct block *b, const char *when)
{
	size_t n = b->usable;
	int bad;

	if (n >= 8) {
		uint64_t tag;
		memcpy(&tag, b->p, 8);
		bad = tag != (b->id ^ TAG_MAGIC) || memcmp(b->p + 8, window(b->id), n - 8) != 0;
	} else {
		bad = memcmp(b->p, window(b->id), n) != 0;
	}
	if (bad) {
		size_t off = 0;
		unsigned char want[8];
		for (off = 0; off < n; off++) {
			uint64_t tag = b->id ^ TAG_MAGIC;
			if (off < 8 && n >= 8)
				memcpy(want, &tag, 8);
			unsigned char w = n >= 8 ? (off < 8 ? want[off] : window(b->id)[off - 8]) : window(b->id)[off];
			if (b->p[off] != w)
				break;
		}
		die("%s: block id %llu at %p (req %zu, usable %zu) changed at offset %zu",
		    when, (unsigned long long)b->id, (void *)b->p, b->req, b->usable, off);
	}
}

static const unsigned char zeros[MAX_USABLE];

NOCOV static void check_zero(const unsigned char *p, size_t n, const char *what)
{
	if (memcmp(p, zeros, n) == 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (p[i])
			die("%s: new block %p not zero at offset %zu of %zu", what, (const void *)p, i, n);
}

static void check_stats(const char *when)
{
	struct secretmem_stats st;

	if (secretmem_stats(&st) != 0)
		die("%s: secretmem_stats failed", when);
	if (st.live_allocations != nlive)
		die("%s: live_allocations %zu, expected %zu", when, st.live_allocations, nlive);
	if (st.bytes_in_use != live_bytes)
		die("%s: bytes_in_use %zu, expected %zu", when, st.bytes_in_use, live_bytes);
	if (st.bytes_in_use > st.bytes_mapped)
		die("%s: bytes_in_use %zu > bytes_mapped %zu", when, st.bytes_in_use, st.bytes_mapped);
	if (st.regions > st.regions_created)
		die("%s: regions %zu > regions_created %zu", when, st.regions, st.regions_created);
	for (size_t i = 0; i < sizeof(st.reserved) / sizeof(st.reserved[0]); i++)
		if (st.reserved[i])
			die("%s: reserved[%zu] = %zu", when, i, st.reserved[i]);
}

/* The first and last EDGE bytes of a block: where a neighbour's overflow,
 * a free that zeroes too much or a realloc that copies too much lands. */
#define EDGE 64

NOCOV static void check_edges(const struct block *b, const char *when)
{
	if (b->usable <= 2 * EDGE) {
		check_block(b, when);
		return;
	}
	uint64_t tag;
	size_t tail = b->usable - EDGE;
	memcpy(&tag, b->p, 8);
	if (tag != (b->id ^ TAG_MAGIC) || memcmp(b->p + 8, window(b->id), EDGE - 8) != 0 ||
	    memcmp(b->p + tail, window(b->id) + tail - 8, EDGE) != 0)
		check_block(b, when); /* finds the offset and dies */
}

/*
 * Every EDGE_EVERY steps: the edges of every live block (a full check of
 * up to 16 MiB after every step would make each input take seconds; the
 * edges after every step took a sixth of the time per input).  Every block
 * is also checked in full before it is freed, reallocated or rewritten,
 * and at the end of the input, so no change to a live block goes unseen;
 * the periodic check only names the operation sooner.  The statistics: at
 * the end of the input after its blocks are freed, in one input in
 * LIVE_STATS_ONE_IN (chosen by its hash) also before, with them live, and
 * on OP_STATS.  secretmem_stats() reads /proc/self/status and makes other
 * system calls (13-40 us here, as much as a hundred small operations):
 * every 8 steps it took a third of the time per input, and with cheap
 * large blocks two calls per input still did.  Its counters are running
 * sums, so a miscount stays visible to the end.
 */
#define EDGE_EVERY 4
#define LIVE_STATS_ONE_IN 4
static int live_stats;

NOCOV static void check_all(const char *when, size_t step)
{
	int full = step == 0;

	if (!full && step % EDGE_EVERY)
		return;
	for (size_t i = 0; i < nlive; i++) {
		const struct block *b = &slots[live_list[i]];
		if (full)
			check_block(b, when);
		else
			check_edges(b, when);
	}
	if (full && nlive && live_stats)
		check_stats(when);
}

/* A NULL result is only allowed at a real memory-lock limit. */
static void null_result(const char *what, size_t n)
{
	struct secretmem_stats st;
	int e = errno;

	if (e != ENOMEM)
		die("%s(%zu) = NULL with errno %d (%s), expected ENOMEM", what, n, e, strerror(e));
	if (secretmem_stats(&st) == 0 && st.memlock_unlimited)
		die("%s(%zu) = NULL/ENOMEM without any memory-lock limit", what, n);
}

/*
 * Record a new block in slot s (empty); checks the usable size (the rule of
 * usable_wrong(), or exactly keep when non-zero), alignment (the documented
 * one, and align when non-zero), and that it is all zero.
 */
static void adopt(int s, void *p, size_t req, const char *what, int zero, size_t keep, size_t align)
{
	struct block *b = &slots[s];
	size_t u = secretmem_usable_size(p);
	const char *bad = keep ? (u == keep ? NULL : "not kept") : usable_wrong(req, u, align);

	if (bad)
		die("%s(%zu): usable size %zu: %s", what, req, u, bad);
	if ((uintptr_t)p % expected_align(u))
		die("%s(%zu): %p not aligned to %zu", what, req, p, expected_align(u));
	if (align && (uintptr_t)p % align)
		die("%s(%zu): %p not aligned to %zu as asked", what, req, p, align);
	if (secretmem_owns(p) != 1)
		die("%s(%zu): secretmem_owns(%p) != 1", what, req, p);
	if (zero)
		check_zero(p, u, what);
	for (size_t i = 0; i < nlive; i++)
		if (slots[live_list[i]].p == p)
			die("%s(%zu): returned %p, which is live in slot %u", what, req, p, live_list[i]);
	b->p = p;
	b->req = req;
	b->usable = u;
	b->id = next_id++;
	live_pos[s] = (unsigned)nlive;
	live_list[nlive++] = (unsigned char)s;
	live_bytes += u;
	fill(b);
}

static void drop_slot(int s)
{
	unsigned i = live_pos[s], last = live_list[--nlive];

	live_list[i] = (unsigned char)last;
	live_pos[last] = i;
	live_bytes -= slots[s].usable;
	memset(&slots[s], 0, sizeof(slots[s]));
}

static void do_free(int s)
{
	if (!slots[s].p)
		return;
	check_block(&slots[s], "before free");
	secretmem_free(slots[s].p);
	drop_slot(s);
}

/*
 * Big operations - a block over 64 KiB, an alignment over a page, a trim -
 * cost each from a few hundred microseconds (fill, checks and zeroing of up
 * to 2 MiB, chunks faulted in again after a trim) to tens of milliseconds
 * where a large block is a fresh secret mapping (4 KiB faulted in costs
 * 40-60 us on this VM); once an input with one is in the corpus, its
 * mutations carry it to most inputs, and they took 4/5 of the time (with
 * large blocks from chunk pages, blocks over 1 MiB are still own mappings:
 * at one input in 64 they took a fifth).  So only
 * one input in BIG_ONE_IN gets them, chosen by a hash of its bytes (most
 * mutations of it lose them again), and at most BIG_BUDGET each: without,
 * a size stays at most 64 KiB, an alignment at most a page, and a trim
 * becomes a usable-size check.  Both depend on the input only, so it
 * behaves the same alone.  make-corpus.py gives its seeds the right hash.
 */
#ifndef BIG_ONE_IN
#define BIG_ONE_IN 256
#endif
#define BIG_BUDGET 2
static unsigned big_left;

/* FNV-1a over the input: the big operations' gate. */
NOCOV static uint32_t input_hash(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	return h;
}

static size_t shape_size(unsigned mode, unsigned v)
{
	switch (mode) {
	case 0: return v % 33;
	case 1: return v % 1025;
	case 2: {
		size_t c = classes[v % NCLASSES];
		return c + ((v >> 8) % 3) - 1; /* c-1, c, c+1 */
	}
	default:
		/* 0..2 MiB: three quarters small, then large blocks up to 64 KiB,
		 * and 1/256 of the values 64 KiB..2 MiB (a block of a MiB costs
		 * the harness and the allocator a few passes over it: made
		 * frequent, they would take most of the time per input) */
		if (v < ANY_SPLIT)
			return (size_t)v * (ANY_SMALL + 1) / ANY_SPLIT;
		if (v < BIG_SPLIT)
			return ANY_SMALL + 1 + (size_t)(v - ANY_SPLIT) * (MID_SIZE - ANY_SMALL - 1) / (BIG_SPLIT - 1 - ANY_SPLIT);
		if (!big_left)
			return MID_SIZE - (v - BIG_SPLIT);
		big_left--;
		return MID_SIZE + (size_t)(v - BIG_SPLIT) * (MAX_SIZE - MID_SIZE) / (65535 - BIG_SPLIT);
	}
}

static void do_malloc(int s, size_t n)
{
	do_free(s);
	void *p = secretmem_malloc(n);
	if (!p) {
		null_result("malloc", n);
		return;
	}
	adopt(s, p, n, "malloc", 1, 0, 0);
}

/*
 * sm_alloc_aligned(align, n): mod 0 alignments 1..16, 1 32..4096, 2 8 KiB..
 * 2 MiB (a hash of v picks one), 3 an invalid one (0 or not a power of two:
 * NULL, EINVAL, nothing allocated).
 */
static void do_aligned(int s, size_t n, unsigned mod, unsigned v)
{
	static const unsigned char lo[3] = { 0, 5, 13 }, span[3] = { 5, 8, 9 };
	unsigned h = (v * 0x9e3779b1u) >> 16;

	do_free(s);
	if (mod == 3) {
		/* two different bits set, or 0 */
		unsigned k = h % 22, j = (k + 1 + (h >> 5) % 21) % 22;
		size_t a = h % 7 == 0 ? 0 : (size_t)1 << k | (size_t)1 << j;
		errno = 0;
		void *p = sm_alloc_aligned(a, n);
		if (p || errno != EINVAL)
			die("sm_alloc_aligned(%zu, %zu) = %p errno %d, expected NULL/EINVAL", a, n, p, errno);
		return;
	}
	size_t align = (size_t)1 << (lo[mod] + h % span[mod]);
	if (align > PAGE) {
		if (big_left)
			big_left--;
		else
			align = PAGE;
	}
	void *p = sm_alloc_aligned(align, n);
	if (!p) {
		null_result("sm_alloc_aligned", n);
		return;
	}
	adopt(s, p, n, "sm_alloc_aligned", 1, 0, align);
}

static void do_calloc(int s, size_t n, unsigned mod, unsigned v)
{
	do_free(s);
	if (mod == 3 && (v & 1)) {
		/* nmemb * size overflows size_t: NULL with ENOMEM */
		size_t a = SIZE_MAX / 2 + 1 + v, b = 2 + (v >> 8);
		errno = 0;
		void *p = secretmem_calloc(a, b);
		if (p || errno != ENOMEM)
			die("calloc(%zu, %zu) overflow: %p errno %d", a, b, p, errno);
		return;
	}
	size_t nmemb = (size_t)mod * 3 + 1, each = n / nmemb;
	void *p = secretmem_calloc(nmemb, each);
	if (!p) {
		null_result("calloc", nmemb * each);
		return;
	}
	adopt(s, p, nmemb * each, "calloc", 1, 0, 0);
}

static void do_realloc(int s, size_t n)
{
	struct block *b = &slots[s];

	if (!b->p) {
		void *p = secretmem_realloc(NULL, n);
		if (!p) {
			null_result("realloc(NULL)", n);
			return;
		}
		adopt(s, p, n, "realloc(NULL)", 1, 0, 0);
		return;
	}
	check_block(b, "before realloc");
	struct block old = *b;
	unsigned char *p = secretmem_realloc(b->p, n);
	if (n == 0 && p == NULL) {
		drop_slot(s); /* realloc to 0 frees */
		return;
	}
	if (!p) {
		null_result("realloc", n);
		check_block(b, "after failed realloc");
		return;
	}
	size_t keep = old.req < n ? old.req : n;
	/* the contents up to the smaller size survive */
	if (keep >= 8) {
		uint64_t tag;
		memcpy(&tag, p, 8);
		if (tag != (old.id ^ TAG_MAGIC) || memcmp(p + 8, window(old.id), keep - 8) != 0)
			die("realloc(%zu -> %zu) lost contents (%p -> %p)", old.req, n, (void *)old.p, (void *)p);
	} else if (old.usable >= 8) {
		uint64_t tag = old.id ^ TAG_MAGIC;
		if (memcmp(p, &tag, keep) != 0)
			die("realloc(%zu -> %zu) lost contents (%p -> %p)", old.req, n, (void *)old.p, (void *)p);
	} else if (memcmp(p, window(old.id), keep) != 0) {
		die("realloc(%zu -> %zu) lost contents (%p -> %p)", old.req, n, (void *)old.p, (void *)p);
	}
	drop_slot(s);
	if (p != old.p && secretmem_owns(old.p))
		die("realloc moved %p -> %p but the old block is still owned", (void *)old.p, (void *)p);
	/* in place, a block keeps its usable size (a large block shrunk to at
	 * least half stays where it is) or gets the one for n; a moved one
	 * gets the one for n */
	size_t u = secretmem_usable_size(p);
	if (p != old.p && n > old.usable) {
		/* moved to grow: room (or the plain rule), the room all zero */
		const char *bad = room_wrong(n, u);
		if (bad)
			die("realloc(%zu -> %zu): usable size %zu: %s", old.req, n, u, bad);
		check_zero(p + old.usable, u - old.usable, "realloc's room");
	}
	adopt(s, p, n, "realloc", 0, p == old.p && u == old.usable ? old.usable : p != old.p && n > old.usable ? u : 0,
	      0);
}

static void do_strdup(int s, size_t n, unsigned mod)
{
	const char *src = (const char *)str_src;

	do_free(s);
	if (n > MID_SIZE)
		n = MID_SIZE;
	str_src[n] = '\0';
	char *d;
	size_t len = n;
	if (mod & 1) {
		size_t lim = mod & 2 ? n / 2 : n + 7;
		d = secretmem_strndup(src, lim);
		len = lim < n ? lim : n;
	} else {
		d = secretmem_strdup(src);
	}
	if (!d) {
		null_result("strdup", n + 1);
		return;
	}
	str_src[n] = (unsigned char)(ref[n] | 1);
	if (memcmp(d, src, len) != 0 || d[len] != '\0')
		die("strdup/strndup of %zu bytes: wrong copy", len);
	/* the rest of the block was zero */
	check_zero((unsigned char *)d + len, secretmem_usable_size(d) - len, "strdup");
	adopt(s, d, len + 1, "strdup", 0, 0, 0);
}

static void do_owns(int s, unsigned v)
{
	int local = 0;

	if (secretmem_owns(NULL) || secretmem_owns(&local) || secretmem_owns(ref) || secretmem_owns(slots))
		die("secretmem_owns() of a foreign pointer is not 0");
	struct block *b = &slots[s];
	if (!b->p)
		return;
	if (secretmem_owns(b->p) != 1)
		die("secretmem_owns(%p) of a live block is not 1", (void *)b->p);
	size_t off = 1 + v % b->usable;
	if (off < b->usable && secretmem_owns(b->p + off))
		die("secretmem_owns(%p + %zu) interior pointer is not 0", (void *)b->p, off);
}

/*
 * A deliberate failure, for test/t_rel_fuzz_run's check that a crash found
 * in a long run reproduces alone (-runs=1 on the saved input).  With
 * SECRETMEM_FUZZ_INJECT=1, OP_STATS with value INJECT_VALUE while a block is
 * live fails with a message made only of the input's own figures.  With
 * SECRETMEM_FUZZ_INJECT=2 it fails only when an earlier input (or segment)
 * ran in the same process: a failure that depends on history, as one that
 * depends on the allocator's caches would; the input alone does not
 * reproduce it (that check's mutation test), the history file does.
 */
#define INJECT_VALUE 0x1ec7u
/* OP_STATS with modifier 3 and this value: OP_RESET (see run_segment) */
#define RESET_VALUE 0x5e7eu

static unsigned long inputs_run, segments_run;

static void injected_failure(size_t step)
{
	if (nlive == 0 || (inject == 2 && segments_run < 2))
		return;
	die("injected failure at operation %zu: %zu live blocks, %zu bytes", step, nlive, live_bytes);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *e = getenv("SECRETMEM_FUZZ_INJECT");

	(void)argc;
	(void)argv;
	inject = e ? atoi(e) : 0;
	e = getenv("SECRETMEM_FUZZ_HISTORY");
	if (e && *e)
		history_open(e);
	return 0;
}

/*
 * One segment: the operations of an input up to the next OP_RESET (or its
 * end).  The harness's state is canonical at the start of every segment (no
 * live block, ids from 1), and the segment ends by checking every block,
 * freeing them all and checking that the statistics are back to zero.
 */
static void run_segment(const uint8_t *data, size_t size)
{
	segments_run++;
	next_id = 1;
	uint32_t h = input_hash(data, size);
	big_left = h % BIG_ONE_IN == 0 ? BIG_BUDGET : 0;
	live_stats = (h >> 8) % LIVE_STATS_ONE_IN == 0;
	for (size_t pos = 0; pos + 4 <= size; pos += 4) {
		unsigned opb = data[pos], s = data[pos + 1];
		unsigned v = (unsigned)data[pos + 2] | (unsigned)data[pos + 3] << 8;
		unsigned mode = (opb >> 4) & 3, mod = opb >> 6;
		/* the size: computed only by the operations that use it (it
		 * may take one of the input's big operations) */
#define N() shape_size(mode, v)

		switch ((enum fuzz_op)(opb & 15)) {
		case OP_MALLOC:
			do_malloc((int)s, N());
			break;
		case OP_ALIGNED:
			do_aligned((int)s, N(), mod, v);
			break;
		case OP_CALLOC:
			do_calloc((int)s, N(), mod, v);
			break;
		case OP_FREE:
		case OP_FREE2:
			do_free((int)s);
			break;
		case OP_REALLOC:
		case OP_REALLOC2:
			do_realloc((int)s, N());
			break;
		case OP_STRDUP:
			do_strdup((int)s, N(), mod);
			break;
		case OP_TRIM:
			/* only with modifier 3, and a big operation left: a trim
			 * gives back every empty chunk, and the operations after
			 * it fault fresh secret pages (the others check a usable
			 * size) */
			if (mod == 3 && big_left) {
				big_left--;
				long r = secretmem_trim();
				if (r < 0)
					die("secretmem_trim() = %ld", r);
				break;
			}
			/* fall through */
		case OP_USABLE:
			if (slots[s].p && secretmem_usable_size(slots[s].p) != slots[s].usable)
				die("usable size of %p changed", (void *)slots[s].p);
			if (secretmem_usable_size(NULL) != 0)
				die("secretmem_usable_size(NULL) != 0");
			break;
		case OP_HUGE: {
			size_t h = mod == 0 ? SIZE_MAX - v : mod == 1 ? (SIZE_MAX >> 1) + v
				 : mod == 2 ? ((size_t)1 << 48) + v : SIZE_MAX - 4096 * (size_t)v;
			errno = 0;
			void *p = secretmem_malloc(h);
			if (p || errno != ENOMEM)
				die("malloc(%zu) = %p errno %d, expected NULL/ENOMEM", h, p, errno);
			if (slots[s].p) {
				p = secretmem_realloc(slots[s].p, h);
				if (p || errno != ENOMEM)
					die("realloc(%zu) = %p errno %d, expected NULL/ENOMEM", h, p, errno);
			}
			break;
		}
		case OP_REFILL:
			if (slots[s].p) {
				check_block(&slots[s], "before refill");
				slots[s].id = next_id++;
				fill(&slots[s]);
			}
			break;
		case OP_REUSE:
			/* free and allocate the same size: the just-freed slot
			 * comes back, and must come back zeroed */
			if (slots[s].p) {
				size_t req = slots[s].req;
				do_free((int)s);
				do_malloc((int)s, req);
			} else {
				do_malloc((int)s, N());
			}
			break;
		case OP_REALLOC0:
			if (slots[s].p) {
				check_block(&slots[s], "before realloc 0");
				errno = 12345;
				void *p = secretmem_realloc(slots[s].p, 0);
				if (p)
					die("realloc(%p, 0) = %p, expected NULL", (void *)slots[s].p, p);
				if (errno != 12345)
					die("realloc(p, 0) changed errno to %d", errno);
				drop_slot((int)s);
			}
			break;
		case OP_OWNS:
			do_owns((int)s, v);
			break;
		case OP_STATS:
			if (inject && v == INJECT_VALUE)
				injected_failure(pos / 4 + 1);
			/* only with modifier 0: at one operation in 16 the
			 * statistics took a third of the time per input (see
			 * check_all); the others check a usable size */
			if (mod == 0) {
				check_stats("stats op");
				break;
			}
			if (slots[s].p && secretmem_usable_size(slots[s].p) != slots[s].usable)
				die("usable size of %p changed", (void *)slots[s].p);
			break;
		}
		check_all("after operation", pos / 4 + 1);
	}
#undef N
	check_all("end of input", 0);
	for (int s = 0; s < NSLOTS; s++)
		do_free(s);
	check_stats("end of input");
}

static int is_reset(const uint8_t *op)
{
	return (op[0] & 0xcf) == (OP_STATS | 3u << 6) && (op[2] | op[3] << 8) == RESET_VALUE;
}

/*
 * The history file (SECRETMEM_FUZZ_HISTORY=path): a shared mapping of the
 * file holding the last inputs run in this process, each after an
 * OP_RESET, then the current one, an OP_RESET and no-op operations
 * (OP_USABLE of slot 0) to the end.  It is itself an input: if a failure
 * depends on what earlier inputs left in the allocator's caches (the crash
 * input then passes alone), `fuzz_alloc -runs=1 HISTORY` replays them in a
 * fresh process in the same order.  The mapping keeps the bytes however
 * the process ends (abort, a sanitizer report, a signal).  Cost: one copy
 * of HIST_BYTES per input.
 */
#define HIST_BYTES 16384
static unsigned char hist[HIST_BYTES], *hist_map;
static size_t hist_len; /* bytes of earlier inputs in hist */

static void history_open(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || ftruncate(fd, HIST_BYTES + 8) != 0) {
		fprintf(stderr, "fuzz_alloc: history file %s: %s\n", path, strerror(errno));
		exit(2);
	}
	void *m = mmap(NULL, HIST_BYTES + 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		fprintf(stderr, "fuzz_alloc: mmap of %s: %s\n", path, strerror(errno));
		exit(2);
	}
	hist_map = m;
}

static const uint8_t reset_op[4] = { OP_STATS | 3u << 6, 0, RESET_VALUE & 255, RESET_VALUE >> 8 };

NOCOV static void history_add(const uint8_t *data, size_t ops)
{
	size_t need = 4 + ops + 4;

	if (need > HIST_BYTES) { /* too long to keep: the history restarts */
		hist_len = 0;
		memset(hist_map, 0, HIST_BYTES + 8);
		return;
	}
	/* drop the oldest inputs until this one fits */
	size_t drop = 0;
	while (hist_len - drop + need > HIST_BYTES) {
		size_t next = drop + 4;
		while (next < hist_len && !is_reset(hist + next))
			next += 4;
		drop = next;
	}
	memmove(hist, hist + drop, hist_len - drop);
	hist_len -= drop;
	memcpy(hist + hist_len, reset_op, 4);
	memcpy(hist + hist_len + 4, data, ops);
	size_t n = hist_len + 4 + ops;
	memcpy(hist_map, hist, n);
	memcpy(hist_map + n, reset_op, 4);
	for (size_t i = n + 4; i + 4 <= HIST_BYTES + 8; i += 4)
		memcpy(hist_map + i, "\x09\0\0\0", 4); /* OP_USABLE of slot 0 */
	hist_len = n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ops = size & ~(size_t)3, start = 0;

	inputs_run++;
	if (!ref_ready)
		init_ref();
	if (hist_map)
		history_add(data, ops);
	for (size_t pos = 0; pos < ops; pos += 4) {
		if (is_reset(data + pos)) {
			run_segment(data + start, pos - start);
			start = pos + 4;
		}
	}
	run_segment(data + start, ops - start);
	return 0;
}
