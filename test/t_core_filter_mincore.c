/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_filter_mincore - the library alone (no heap module) stops asking
 * mincore(2) once it has seen a seccomp filter (secretmem(7)): a
 * single-threaded program uses secret memory (a large block and a block of
 * many pages in a chunk, every page written), installs a filter that kills
 * at mincore, then creates a region - the library's memfd_secret call reads
 * the thread's status, Seccomp: 2 - and frees the blocks, which zeroes
 * their pages: the process lives, the region is secret memory, and the
 * blocks' memory comes back zeroed for the next blocks.  Without the
 * sighting the first free dies of SIGSYS.
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

static int run_case(void *arg)
{
	(void)arg;
	tl_need_secretmem();
	size_t lsize = (size_t)256 << 10, csize = (size_t)12 << 10;
	unsigned char *large = secretmem_malloc(lsize), *pages = secretmem_malloc(csize);
	TL_CHECK(large && pages, "first use: %s", strerror(errno));
	memset(large, 0xa5, lsize);
	memset(pages, 0x5a, csize);

	TL_CHECK(tl_seccomp_action(SYS_mincore, SECCOMP_RET_KILL_PROCESS) == 0, "the filter");
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "region after the filter: %s", strerror(errno));
	TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "region backend %s",
		 secretmem_backend_name(secretmem_region_backend(r)));
	printf("filter in, region secret\n");
	fflush(stdout);

	secretmem_free(pages); /* many pages of a chunk: zeroed */
	secretmem_free(large); /* a region of its own: zeroed, released */
	unsigned char *again = secretmem_malloc(csize);
	TL_CHECK(again, "malloc after the frees: %s", strerror(errno));
	for (size_t i = 0; i < csize; i++)
		TL_CHECK(again[i] == 0, "byte %zu of a new block is %#x", i, again[i]);
	secretmem_free(again);
	secretmem_region_destroy(r);
	printf("lived through the frees\n");
	return 0;
}

int main(void)
{
	static char out[16384];

	if (tl_under_valgrind())
		tl_skip("valgrind answers memfd_secret(2) itself: no secret memory to free");
#ifdef TL_TSAN
	/* the sighting is a single-threaded process's (secretmem(7)) */
	tl_skip("ThreadSanitizer runs a thread of its own: the process is never single-threaded");
#endif
	int st = tl_run_child(run_case, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == TL_SKIP)
		tl_skip_kernel("no memfd_secret here");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "lived through the frees"), "child: %s",
		 tl_status_str(st));
	return TL_PASS;
}
