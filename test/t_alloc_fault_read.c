/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_read - with the regime taken as "charged at fault time"
 * (forced here; the newer kernels), new chunk pages are faulted in from the
 * kernel side (a read from /dev/zero), never by a user-space touch, ahead of
 * the need by as many pages as the chunk has (1, 2, 4, ... at most 32): one
 * 32-byte secret faults one page, 20,000 fault between the pages needed and
 * 32 more, in few calls.  A refused fault-in (injected EFAULT: what such a
 * kernel returns past RLIMIT_MEMLOCK) fails the allocation with ENOMEM.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "faultin.h"
#include "internal.h"
#include "tlib.h"

#define N 20000
#define AHEAD_MAX 32
#define BIG (3 << 20) /* a block of its own: new pages, faulted in at once */
static void *blk[N];

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), one;
	struct secretmem_stats b;
	struct fi_counts c1, c2, c3;
	long refused;

	sm_fault_regime_force(SM_REGIME_FAULT);
	tl_need_secretmem();
	TL_CHECK(sm_fault_regime() == SM_REGIME_FAULT, "the forced regime did not hold");
	fi_one_secret(&one, &c1);
	printf("one 32-byte secret: %zu pages faulted (%zu by touch, %zu from the kernel side)\n", one, c1.touched,
	       c1.read);
	TL_CHECK(one == 1, "one small secret faulted %zu pages", one);
	TL_CHECK(c1.read == 1 && c1.touched == 0, "one small secret: %zu pages read, %zu touched", c1.read,
		 c1.touched);

	fi_grow(blk, N, &b, &c2);
	size_t need = (N * (size_t)32 + ps - 1) / ps;
	printf("%d secrets: %zu pages faulted (%zu needed), %zu from the kernel side in %ld calls, %zu by touch\n", N,
	       b.pages_faulted, need, c1.read + c2.read, c2.calls, c2.touched);
	TL_CHECK(b.pages_faulted > need && b.pages_faulted <= need + AHEAD_MAX,
		 "%zu pages faulted for %zu needed: want more (the fault-ahead), at most %d more",
		 b.pages_faulted, need, AHEAD_MAX);
	TL_CHECK(c1.read + c2.read == b.pages_faulted && c2.touched == 0, "%zu pages read, %zu touched",
		 c1.read + c2.read, c2.touched);
	TL_CHECK(c2.calls > 0 && (size_t)c2.calls * 4 <= need, "%ld fault-in calls for %zu pages: no batching",
		 c2.calls, need);

	fi_refuse_once(BIG, &refused, &c3);
	TL_CHECK(c3.touched == 0, "%zu pages touched from user space", c3.touched);
	for (int i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: fault-time regime: kernel-side fault-in with a bounded look-ahead\n");
	return TL_PASS;
}
