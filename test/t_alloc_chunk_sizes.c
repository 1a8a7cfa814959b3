/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_chunk_sizes - the allocator's chunks: the first is 16 pages
 * (64 KiB with 4 KiB pages, as secretmem(7) says), the second 256 pages, the
 * ones after a granule (2 MiB less its two guard pages); after a trim that
 * released every chunk, and in a fork child under the "drop" policy, the
 * next chunk is a first one again; SECRETMEM_RESERVE faults in exactly the
 * pages asked for.  The sizes are those without a memory-lock limit (root,
 * or an unlimited RLIMIT_MEMLOCK): under a limit each chunk takes at most a
 * quarter of what is left of it (t_alloc_memlock_small).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "slab.h"
#include "tlib.h"

#define MAXBLK 2000

static void *blk[MAXBLK];
static int nblk;

static struct secretmem_stats stats(void)
{
	struct secretmem_stats st;

	TL_CHECK(secretmem_stats(&st) == 0, "secretmem_stats");
	return st;
}

/* 16 KiB blocks (four pages each, one per slab) until the allocator has
 * `regions` chunks. */
static void grow_to(size_t regions)
{
	while (stats().regions < regions) {
		TL_CHECK(nblk < MAXBLK, "%d blocks of 16 KiB and still not %zu chunks", nblk, regions);
		blk[nblk] = secretmem_malloc(16384);
		TL_CHECK(blk[nblk], "malloc(16384): %s", strerror(errno));
		nblk++;
	}
}

static void free_all(void)
{
	while (nblk > 0)
		secretmem_free(blk[--nblk]);
}

/* In a fork child under the drop policy: the allocator starts empty and its
 * first chunk is 16 pages, whatever the parent had. */
static int drop_child(void *arg)
{
	(void)arg;
	struct secretmem_stats st = stats();
	if (st.regions != 0) {
		printf("drop child: %zu chunks before its first allocation\n", st.regions);
		return 3;
	}
	void *p = secretmem_malloc(32);
	st = stats();
	if (!p || st.regions != 1 || st.pages_mapped != 16) {
		printf("drop child: after malloc(32): %p, %zu chunks, %zu pages mapped (expected 1, 16)\n", p,
		       st.regions, st.pages_mapped);
		return 4;
	}
	secretmem_free(p);
	return 0;
}

/* A fresh process with SECRETMEM_RESERVE=2100k (525 pages with 4 KiB
 * pages): a granule's worth and 15 pages, faulted exactly. */
static int reserve_checks(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), want = ((size_t)2100 << 10) / ps;
	void *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc(32) with a reserve: %s", strerror(errno));
	struct secretmem_stats st = stats();
	printf("reserve 2100k: %zu pages faulted, %zu mapped, %zu chunks\n", st.pages_faulted, st.pages_mapped,
	       st.regions);
	TL_CHECK(st.pages_faulted == want, "SECRETMEM_RESERVE=2100k faulted %zu pages, not the %zu asked for",
		 st.pages_faulted, want);
	TL_CHECK(st.pages_mapped == want, "SECRETMEM_RESERVE=2100k mapped %zu pages, not %zu", st.pages_mapped, want);
	secretmem_free(p);
	return TL_PASS;
}

int main(int argc, char **argv)
{
	static char out[8192];

	if (argc > 1 && strcmp(argv[1], "reserve") == 0)
		return reserve_checks();
	tl_need_secretmem();
	int unlimited;
	size_t limit, locked;
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (!unlimited)
		tl_skip("the chunk sizes checked here are those without a memory-lock limit (run as root)");
	TL_CHECK(sysconf(_SC_PAGESIZE) == 4096, "4 KiB pages expected");
	size_t granule = (SM_GRANULE >> 12) - 2;
	if (granule > SM_CHUNK_MAX_PAGES)
		granule = SM_CHUNK_MAX_PAGES;

	/* the process's first allocation: no chunk before it */
	struct secretmem_stats st = stats();
	TL_CHECK(st.regions == 0, "%zu chunks before the first allocation", st.regions);
	void *first = secretmem_malloc(32);
	TL_CHECK(first, "malloc(32): %s", strerror(errno));
	st = stats();
	TL_CHECK(st.regions == 1 && st.pages_mapped == 16, "first chunk: %zu chunks, %zu pages (expected 1, 16)",
		 st.regions, st.pages_mapped);
	grow_to(2);
	st = stats();
	TL_CHECK(st.pages_mapped == 16 + 256, "second chunk: %zu pages mapped in all (expected 16 + 256)",
		 st.pages_mapped);
	grow_to(3);
	st = stats();
	TL_CHECK(st.pages_mapped == 16 + 256 + granule, "third chunk: %zu pages mapped in all (expected 16 + 256 + %zu)",
		 st.pages_mapped, granule);
	printf("chunks of 16, 256 and %zu pages for %d blocks of 16 KiB\n", granule, nblk);

	/* everything freed and trimmed: the next chunk is a first chunk */
	free_all();
	secretmem_free(first);
	secretmem_trim();
	st = stats();
	TL_CHECK(st.regions == 0 && st.pages_mapped == 0, "after freeing all and trimming: %zu chunks, %zu pages",
		 st.regions, st.pages_mapped);
	first = secretmem_malloc(32);
	st = stats();
	TL_CHECK(first && st.regions == 1 && st.pages_mapped == 16,
		 "after a trim that released every chunk: %zu chunks, %zu pages (expected 1, 16)", st.regions,
		 st.pages_mapped);
	printf("ok: after the trim the next chunk is 16 pages again\n");

	/* a fork child that drops the parent's two chunks starts at 16 pages */
	grow_to(2);
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_DROP) == 0, "set_option(FORK, DROP)");
	int ws = tl_run_child(drop_child, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "drop child: %s", tl_status_str(ws));
	printf("ok: a drop child's first chunk is 16 pages\n");
	free_all();
	secretmem_free(first);

	const char *env[] = { "SECRETMEM_RESERVE=2100k", NULL };
	ws = tl_run_self(argv[0], "reserve", env, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "SECRETMEM_RESERVE=2100k: %s", tl_status_str(ws));
	printf("ok: chunk sizes\n");
	return TL_PASS;
}
