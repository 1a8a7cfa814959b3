/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_touch - on a kernel that charges secret memory at mmap time
 * (the mapping is VM_LOCKED), new chunk pages are faulted in from user space,
 * exactly as many as are needed: one 32-byte secret faults one page, 20,000
 * fault exactly the pages their slots fill, none from the kernel side.  The
 * fault injection (a refused fault-in) still fails the allocation that needs
 * new pages, with ENOMEM, once.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "tlib.h"

#define N 20000
#define BIG (3 << 20) /* a block of its own: new pages, faulted in at once */
static void *blk[N];

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), t0, k0, t1, k1;
	struct secretmem_stats a, b;

	tl_need_secretmem();
	if (sm_fault_regime() != SM_REGIME_MMAP)
		tl_skip("the kernel does not charge secret memory at mmap time (or the probe gave no answer): "
			"pages are faulted in from the kernel side here");
	sm_fault_in_counts(&t0, &k0);
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	TL_CHECK(secretmem_stats(&a) == 0, "stats");
	sm_fault_in_counts(&t1, &k1);
	printf("one 32-byte secret: %zu pages faulted (%zu by touch, %zu from the kernel side)\n", a.pages_faulted,
	       t1 - t0, k1 - k0);
	TL_CHECK(a.pages_faulted == 1, "one small secret faulted %zu pages", a.pages_faulted);
	TL_CHECK(t1 - t0 == 1 && k1 == k0, "one small secret: %zu pages touched, %zu read", t1 - t0, k1 - k0);
	secretmem_free(p);

	for (int i = 0; i < N; i++) {
		blk[i] = secretmem_malloc(32);
		TL_CHECK(blk[i], "malloc: %s", strerror(errno));
		memset(blk[i], 1, 32);
	}
	TL_CHECK(secretmem_stats(&b) == 0, "stats");
	sm_fault_in_counts(&t1, &k1);
	size_t need = (N * (size_t)32 + ps - 1) / ps; /* slots of 32 bytes fill whole pages */
	printf("%d secrets: %zu pages faulted (%zu needed), %zu by touch, %zu from the kernel side\n", N,
	       b.pages_faulted, need, t1 - t0, k1 - k0);
	TL_CHECK(b.pages_faulted == need, "%zu pages faulted for %zu needed", b.pages_faulted, need);
	TL_CHECK(t1 - t0 == need && k1 == k0, "%zu pages touched, %zu read, for %zu needed", t1 - t0, k1 - k0,
		 need);

	/* a refused fault-in (injected) on the touch path: ENOMEM, once */
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 0);
	errno = 0;
	void *x = secretmem_malloc(BIG);
	TL_CHECK(!x && errno == ENOMEM, "malloc(%d) with the fault-in refused: %p, errno %d", BIG, x, errno);
	TL_CHECK(sm_inject_count(OS_OP_FAULT_IN) == 1, "fault-in calls: %ld", sm_inject_count(OS_OP_FAULT_IN));
	x = secretmem_malloc(BIG);
	TL_CHECK(x, "malloc(%d) after a one-shot refusal: %s", BIG, strerror(errno));
	sm_fault_in_counts(&t1, &k1);
	TL_CHECK(k1 == k0, "%zu pages read from the kernel side", k1 - k0);
	secretmem_free(x);
	for (int i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: mmap-time regime: exactly the pages needed, touched from user space\n");
	return TL_PASS;
}
