/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_large_churn - blocks above 16 KiB come from reused chunk pages:
 * after a warm-up, a churn of random 1 B-64 KiB blocks (64 live) and
 * realloc chains 16 B -> 64 KiB create no new secret memory region and
 * fault in at most one batch of pages (8: the high-water mark settles); every block handed out is zeroed; secretmem_trim()
 * then gives back every page (the kept free runs too) and the allocator
 * works afterwards.
 */
#include <errno.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define LIVE 64

static void *blk[LIVE];
static size_t len[LIVE];
static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void churn(long ops, int check_zero)
{
	for (long i = 0; i < ops; i++) {
		unsigned k = (unsigned)(next() % LIVE);
		secretmem_free(blk[k]);
		len[k] = 1 + (size_t)(next() % 65536);
		blk[k] = secretmem_malloc(len[k]);
		TL_CHECK(blk[k], "malloc(%zu): %s", len[k], strerror(errno));
		if (check_zero)
			TL_CHECK(all_zero(blk[k], len[k]), "malloc(%zu): block not zeroed", len[k]);
		memset(blk[k], 0x5a, len[k]);
	}
}

static void chain(void)
{
	unsigned char *p = secretmem_malloc(16);
	TL_CHECK(p, "malloc(16)");
	memset(p, 1, 16);
	for (size_t s = 32; s <= 65536; s *= 2) {
		p = secretmem_realloc(p, s);
		TL_CHECK(p, "realloc(%zu): %s", s, strerror(errno));
		TL_CHECK(p[0] == 1 && p[s / 2 - 1] == (s == 32 ? 1 : 2), "realloc(%zu) lost the contents", s);
		memset(p + s / 2, 2, s / 2);
	}
	secretmem_free(p);
}

static struct secretmem_stats get(void)
{
	struct secretmem_stats s;

	TL_CHECK(secretmem_stats(&s) == 0, "stats");
	return s;
}

int main(void)
{
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	/* the warm-up does what the churn does: its high-water mark of pages
	 * (which depends on where blocks landed, and so on the chunk sizes a
	 * memory-lock limit gives) is the churn's */
	churn(40000, 0);
	for (int i = 0; i < 50; i++)
		chain();
	struct secretmem_stats a = get();
	churn(40000, 1);
	for (int i = 0; i < 50; i++)
		chain();
	struct secretmem_stats b = get();
	printf("after warm-up: regions_created %zu -> %zu, pages_faulted %zu -> %zu, regions %zu\n",
	       a.regions_created, b.regions_created, a.pages_faulted, b.pages_faulted, b.regions);
	TL_CHECK(b.regions_created == a.regions_created, "the churn created %zu new regions",
		 b.regions_created - a.regions_created);
	TL_CHECK(b.pages_faulted - a.pages_faulted <= 8, "the churn faulted in %zu pages",
		 b.pages_faulted - a.pages_faulted);
	TL_CHECK(b.live_allocations == LIVE, "%zu live blocks, expected %d", b.live_allocations, LIVE);

	for (int k = 0; k < LIVE; k++) {
		secretmem_free(blk[k]);
		blk[k] = NULL;
	}
	long r = secretmem_trim();
	struct secretmem_stats c = get();
	printf("trim: %ld bytes; pages_mapped %zu -> %zu, regions %zu -> %zu\n", r, b.pages_mapped, c.pages_mapped,
	       b.regions, c.regions);
	TL_CHECK(r > 0, "trim returned %ld", r);
	TL_CHECK(c.regions == 0 && c.pages_mapped == 0, "trim kept %zu regions, %zu pages with nothing live", c.regions,
		 c.pages_mapped);
	churn(500, 1);
	chain();
	printf("ok: no new region and at most 8 pages faulted in 40,000 operations and 50 chains after warm-up\n");
	return TL_PASS;
}
