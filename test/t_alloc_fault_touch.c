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
#include "faultin.h"
#include "internal.h"
#include "tlib.h"

#define N 20000
#define BIG (3 << 20) /* a block of its own: new pages, faulted in at once */
static void *blk[N];

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), one;
	struct secretmem_stats b;
	struct fi_counts c1, c2, c3;
	long refused;

	tl_need_secretmem();
	if (sm_fault_regime() != SM_REGIME_MMAP)
		tl_skip("the kernel does not charge secret memory at mmap time (or the probe gave no answer): "
			"pages are faulted in from the kernel side here");
	fi_one_secret(&one, &c1);
	printf("one 32-byte secret: %zu pages faulted (%zu by touch, %zu from the kernel side)\n", one, c1.touched,
	       c1.read);
	TL_CHECK(one == 1, "one small secret faulted %zu pages", one);
	TL_CHECK(c1.touched == 1 && c1.read == 0, "one small secret: %zu pages touched, %zu read", c1.touched,
		 c1.read);

	fi_grow(blk, N, &b, &c2);
	size_t need = (N * (size_t)32 + ps - 1) / ps; /* slots of 32 bytes fill whole pages */
	printf("%d secrets: %zu pages faulted (%zu needed), %zu by touch, %zu from the kernel side\n", N,
	       b.pages_faulted, need, c1.touched + c2.touched, c2.read);
	TL_CHECK(b.pages_faulted == need, "%zu pages faulted for %zu needed", b.pages_faulted, need);
	TL_CHECK(c1.touched + c2.touched == need && c2.read == 0, "%zu pages touched, %zu read, for %zu needed",
		 c1.touched + c2.touched, c2.read, need);

	/* a refused fault-in (injected) on the touch path: ENOMEM, once */
	fi_refuse_once(BIG, &refused, &c3);
	TL_CHECK(refused == 1, "fault-in calls: %ld", refused);
	TL_CHECK(c3.read == 0, "%zu pages read from the kernel side", c3.read);
	for (int i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: mmap-time regime: exactly the pages needed, touched from user space\n");
	return TL_PASS;
}
