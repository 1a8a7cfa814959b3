/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_faulted - where the kernel charges secret memory when a page
 * faults (forced here with sm_fault_regime_force, before the first
 * allocation), a fork child's copy of every region is faulted in whole, from
 * the kernel side, before the child runs: none of its touches can be
 * refused with SIGBUS.  A 64-page region (secretmem_region_create) and a
 * 256 KiB block, one page of each written: in the child every page of both
 * holds memory (mincore).  In the mmap-time regime (the child's mapping of
 * the copy took the charge) the copy skips what is zero: the child holds
 * the written page of each only.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "tlib.h"

#define PAGES 64

static size_t resident(const void *p, size_t len)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	size_t n = ((uintptr_t)p + len - a + ps - 1) / ps, count = 0;
	unsigned char vec[PAGES + 2];

	if (n > sizeof(vec) || mincore((void *)a, n * ps, vec) != 0)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

static int forked(void *arg)
{
	int regime = (int)(intptr_t)arg;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), len = PAGES * ps;

	sm_fault_regime_force(regime);
	struct secretmem_region *r = secretmem_region_create(len, 0);
	unsigned char *b = secretmem_malloc(len - 16);
	TL_CHECK(r && b, "region or block: %s", strerror(errno));
	unsigned char *d = secretmem_region_data(r);
	d[5 * ps] = 1;
	b[3 * ps] = 2;
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		size_t rr = resident(d, len), rb = resident(b, len - 16);
		int kept = d[5 * ps] == 1 && b[3 * ps] == 2;
		printf("regime %d: child holds %zu of %d region pages, %zu of the block's, bytes kept %d\n", regime,
		       rr, PAGES, rb, kept);
		fflush(stdout);
		int want = regime == SM_REGIME_MMAP ? rr == 1 && rb == 1 : rr == PAGES && rb >= PAGES;
		_exit(kept && want ? 0 : 1);
	}
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "regime %d: child %s", regime, tl_status_str(st));
	return 0;
}

int main(void)
{
	static char out[4096];

	tl_need_secretmem();
	if (tl_under_valgrind())
		tl_skip("the regime is not probed under valgrind");
	int mmap_kernel = sm_fault_regime() == SM_REGIME_MMAP;
	static const int regimes[] = { SM_REGIME_FAULT, SM_REGIME_MMAP };
	for (int i = 0; i < 2; i++) {
		if (regimes[i] == SM_REGIME_MMAP && !mmap_kernel) {
			printf("mmap-time regime: skipped, this kernel charges at fault time\n");
			continue;
		}
		int st = tl_run_child(forked, (void *)(intptr_t)regimes[i], out, sizeof(out));
		fputs(out, stdout);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "regime %d: %s", regimes[i], tl_status_str(st));
	}
	printf("ok: a fork child's copy is faulted in whole unless its mapping took the charge\n");
	return TL_PASS;
}
