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
#include "internal.h"
#include "tlib.h"

#define N 20000
#define AHEAD_MAX 32
#define BIG (3 << 20) /* a block of its own: new pages, faulted in at once */
static void *blk[N];

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), t0, k0, t1, k1;
	struct secretmem_stats a, b;

	sm_fault_regime_force(SM_REGIME_FAULT);
	tl_need_secretmem();
	TL_CHECK(sm_fault_regime() == SM_REGIME_FAULT, "the forced regime did not hold");
	sm_fault_in_counts(&t0, &k0);
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	TL_CHECK(secretmem_stats(&a) == 0, "stats");
	sm_fault_in_counts(&t1, &k1);
	printf("one 32-byte secret: %zu pages faulted (%zu by touch, %zu from the kernel side)\n", a.pages_faulted,
	       t1 - t0, k1 - k0);
	TL_CHECK(a.pages_faulted == 1, "one small secret faulted %zu pages", a.pages_faulted);
	TL_CHECK(k1 - k0 == 1 && t1 == t0, "one small secret: %zu pages read, %zu touched", k1 - k0, t1 - t0);
	secretmem_free(p);

	long calls0 = sm_inject_count(OS_OP_FAULT_IN);
	for (int i = 0; i < N; i++) {
		blk[i] = secretmem_malloc(32);
		TL_CHECK(blk[i], "malloc: %s", strerror(errno));
		memset(blk[i], 1, 32);
	}
	long calls = sm_inject_count(OS_OP_FAULT_IN) - calls0;
	TL_CHECK(secretmem_stats(&b) == 0, "stats");
	sm_fault_in_counts(&t1, &k1);
	size_t need = (N * (size_t)32 + ps - 1) / ps;
	printf("%d secrets: %zu pages faulted (%zu needed), %zu from the kernel side in %ld calls, %zu by touch\n", N,
	       b.pages_faulted, need, k1 - k0, calls, t1 - t0);
	TL_CHECK(b.pages_faulted > need && b.pages_faulted <= need + AHEAD_MAX,
		 "%zu pages faulted for %zu needed: want more (the fault-ahead), at most %d more",
		 b.pages_faulted, need, AHEAD_MAX);
	TL_CHECK(k1 - k0 == b.pages_faulted && t1 == t0, "%zu pages read, %zu touched", k1 - k0, t1 - t0);
	TL_CHECK(calls > 0 && (size_t)calls * 4 <= need, "%ld fault-in calls for %zu pages: no batching", calls,
		 need);

	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 0);
	errno = 0;
	void *x = secretmem_malloc(BIG);
	TL_CHECK(!x && errno == ENOMEM, "malloc(%d) with the fault-in refused: %p, errno %d", BIG, x, errno);
	x = secretmem_malloc(BIG);
	TL_CHECK(x, "malloc(%d) after a one-shot refusal: %s", BIG, strerror(errno));
	sm_fault_in_counts(&t1, &k1);
	TL_CHECK(t1 == t0, "%zu pages touched from user space", t1 - t0);
	secretmem_free(x);
	for (int i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: fault-time regime: kernel-side fault-in with a bounded look-ahead\n");
	return TL_PASS;
}
