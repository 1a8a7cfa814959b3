/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_large_guard - large blocks carved from chunk pages (runs) sit
 * between inaccessible guard pages: for sizes across the run classes, with
 * neighbouring runs sharing guard pages, the byte at p + usable_size faults,
 * and so does the byte before a page-aligned block; the same holds for a
 * freed and reused run and for a block that realloc moved to grow (the end
 * of its room is at the guard page, its start at the page below).
 * Past the guard-page budget (set low here with sm_run_guard_limit) runs
 * are carved without guard pages: the count of guard pages and of mappings
 * stays bounded and the blocks still work.
 */
#include "tljmp.h" /* first: the jump out of the handler, under ThreadSanitizer */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "slab.h"
#include "secretmem.h"
#include "tlib.h"

/* The access is made in this process (a fork child would get the copy
 * policy's own guard pages, set again in the child). */
static sigjmp_buf jb;
static volatile sig_atomic_t faulted;

static void on_segv(int sig)
{
	(void)sig;
	faulted = 1;
	siglongjmp(jb, 1);
}

static void expect_segv(unsigned char *p, long off, const char *what, size_t size)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	faulted = 0;
	if (sigsetjmp(jb, 1) == 0)
		*(volatile unsigned char *)(p + off) = 1;
	sigaction(SIGSEGV, &old, NULL);
	TL_CHECK(faulted, "%s (size %zu): write at p%+ld did not fault", what, size, off);
}

/* The whole usable size is writable; the byte past it faults, and so does
 * the byte before a page-aligned block. */
static void check_guards(unsigned char *p, size_t size, const char *what)
{
	size_t u = secretmem_usable_size(p);

	memset(p, 0x77, u);
	expect_segv(p, (long)u, what, size);
	if (((uintptr_t)p & 4095) == 0)
		expect_segv(p, -1, what, size);
}

static void check_block(unsigned char *p, size_t size, const char *what)
{
	size_t u = secretmem_usable_size(p);

	TL_CHECK(u >= size && u < size + 16, "%s: usable %zu for %zu", what, u, size);
	check_guards(p, size, what);
}

int main(void)
{
	static const size_t sizes[] = { 16385, 20000, 5 * 4096, 24577, 28672, 40000, 65536, 100000, 300000, 1048576 };
	unsigned char *b[sizeof(sizes) / sizeof(sizes[0])][2];
	unsigned n = 0;

	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	if (sysconf(_SC_PAGESIZE) != 4096) {
		printf("skip: written for 4 KiB pages\n");
		return TL_SKIP;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int k = 0; k < 2; k++) {
			b[i][k] = secretmem_malloc(sizes[i]);
			TL_CHECK(b[i][k], "malloc(%zu): %s", sizes[i], strerror(errno));
		}
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	printf("%zu regions for 20 large blocks, %zu guard pages\n", st.regions, sm_run_guards());
	TL_CHECK(st.regions < 10, "large blocks got regions of their own: %zu regions", st.regions);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int k = 0; k < 2; k++, n++)
			check_block(b[i][k], sizes[i], "fresh run");

	/* a freed run comes back for the next block of its class, guarded */
	for (size_t i = 1; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t less = sizes[i] - 32;
		secretmem_free(b[i][1]);
		b[i][1] = secretmem_malloc(less);
		TL_CHECK(b[i][1], "malloc: %s", strerror(errno));
		for (size_t j = 0; j < less; j++)
			TL_CHECK(b[i][1][j] == 0, "reused run not zero at %zu", j);
		check_block(b[i][1], less, "reused run");
		/* grow: the block moves to one with room to grow (up to 1 MiB),
		 * whose usable end is at the guard page, and it starts a page */
		size_t had = secretmem_usable_size(b[i][1]);
		unsigned char *q = secretmem_realloc(b[i][1], sizes[i]);
		TL_CHECK(q, "realloc: %s", strerror(errno));
		TL_CHECK(q[0] == 0x77 && q[less - 1] == 0x77, "realloc lost the contents");
		size_t u = secretmem_usable_size(q);
		for (size_t j = had; j < u; j++)
			TL_CHECK(q[j] == 0, "grown part not zero at %zu", j);
		TL_CHECK(u >= (sizes[i] < 524288 ? 2 * sizes[i] : 1048576), "grown to %zu: usable %zu, no room", sizes[i], u);
		TL_CHECK(((uintptr_t)q & 4095) == 0, "grown block with room at %p: not at a page", (void *)q);
		b[i][1] = q;
		check_guards(q, sizes[i], "grown, with room");
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int k = 0; k < 2; k++)
			secretmem_free(b[i][k]);
	secretmem_trim();

	/* the guard-page budget bounds the mappings */
	size_t old = sm_run_guard_limit(6);
	struct secretmem_stats st0, st1;
	TL_CHECK(secretmem_stats(&st0) == 0, "stats");
	/* only secret mappings and their guard pages are counted: a sanitizer's
	 * runtime maps memory of its own meanwhile */
	int secret = secretmem_default_backend() == SECRETMEM_BACKEND_SECRET;
	int maps0 = secret ? tl_maps_count_secret() : tl_maps_count();
	unsigned char *many[40];
	for (int i = 0; i < 40; i++) {
		many[i] = secretmem_malloc(40000);
		TL_CHECK(many[i], "malloc: %s", strerror(errno));
		memset(many[i], i, 40000);
	}
	size_t guards = sm_run_guards();
	int maps1 = secret ? tl_maps_count_secret() : tl_maps_count();
	TL_CHECK(secretmem_stats(&st1) == 0, "stats");
	/* the trim above released every chunk: these runs (~400 pages) take
	 * new ones of 16, 256 and 510 pages, each a mapping with a guard page
	 * at both ends (three entries in the maps); a guard page inside a
	 * chunk adds two (it splits the data mapping) */
	size_t chunks = st1.regions_created - st0.regions_created;
	printf("40 runs under a budget of 6 guard pages: %zu guard pages, %zu new chunks, mappings %d -> %d\n", guards,
	       chunks, maps0, maps1);
	TL_CHECK(guards <= 6, "%zu guard pages over a budget of 6", guards);
	TL_CHECK(chunks <= 3, "%zu new chunks for 40 runs of 40,000 bytes", chunks);
	TL_CHECK(maps1 - maps0 <= 2 * 6 + 3 * (int)chunks, "mappings grew by %d", maps1 - maps0);
	for (int i = 0; i < 40; i++) {
		for (size_t j = 0; j < 40000; j += 997)
			TL_CHECK(many[i][j] == (unsigned char)i, "block %d changed", i);
		secretmem_free(many[i]);
	}
	sm_run_guard_limit(old);
	printf("ok: %u large blocks guarded at both ends; guard budget holds\n", n);
	return TL_PASS;
}
