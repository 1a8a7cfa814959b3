/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_touch - on a kernel that charges secret memory at mmap time
 * (the mapping is VM_LOCKED), the allocator's chunks and large blocks are
 * lazy: new pages are made ready without a touch and each faults at the
 * program's first write, as anonymous memory does.  One 32-byte secret
 * makes one page ready and faults in none; 20,000 make exactly the pages
 * their slots fill ready, none faulted in by the library (their writes
 * fault them); a 3 MiB block never calls the fault-in (an injected refusal
 * of it does not fire) and its first byte written faults one page of it.
 * The public regions (secretmem_region_create) are still faulted in whole
 * at creation, by a user-space touch: secretmem_region_create(3) promises
 * that a later touch can never raise SIGBUS.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "faultin.h"
#include "internal.h"
#include "tlib.h"

#define N 20000
#define BIG (3 << 20) /* a block of its own */
static void *blk[N];

static size_t resident(const void *p, size_t len, size_t ps)
{
	static unsigned char vec[BIG / 4096 + 2];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	size_t n = ((uintptr_t)p + len - a + ps - 1) / ps, count = 0;

	TL_CHECK(n <= sizeof(vec) && mincore((void *)a, n * ps, vec) == 0, "mincore: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		count += vec[i] & 1;
	return count;
}

int main(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), one;
	struct secretmem_stats b;
	struct fi_counts c1, c2;

	tl_need_secretmem();
	if (sm_fault_regime() != SM_REGIME_MMAP)
		tl_skip("the kernel does not charge secret memory at mmap time (or the probe gave no answer): "
			"pages are faulted in from the kernel side here");
	fi_one_secret(&one, &c1);
	printf("one 32-byte secret: %zu pages ready (%zu touched by the library, %zu from the kernel side)\n", one,
	       c1.touched, c1.read);
	TL_CHECK(one == 1, "one small secret made %zu pages ready", one);
	TL_CHECK(c1.touched == 0 && c1.read == 0, "one small secret: %zu pages touched, %zu read", c1.touched,
		 c1.read);

	fi_grow(blk, N, &b, &c2);
	size_t need = (N * (size_t)32 + ps - 1) / ps; /* slots of 32 bytes fill whole pages */
	printf("%d secrets: %zu pages ready (%zu needed), %zu touched by the library, %zu from the kernel side\n", N,
	       b.pages_faulted, need, c2.touched, c2.read);
	TL_CHECK(b.pages_faulted == need, "%zu pages ready for %zu needed", b.pages_faulted, need);
	TL_CHECK(c2.touched == 0 && c2.read == 0, "%zu pages touched, %zu read by the library", c2.touched,
		 c2.read);

	/* a large block: the fault-in is never called (an injected refusal
	 * stays armed), its pages fault at the first touch */
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 0);
	unsigned char *big = secretmem_malloc(BIG);
	long calls = sm_inject_count(OS_OP_FAULT_IN);
	sm_inject_fault(OS_OP_FAULT_IN, 0, 0, 0);
	TL_CHECK(big, "malloc(%d) with a fault-in refusal armed: %s", BIG, strerror(errno));
	size_t before = resident(big, BIG, ps);
	big[BIG / 2] = 1;
	size_t after = resident(big, BIG, ps);
	printf("a 3 MiB block: %ld fault-in calls, %zu pages resident, %zu after one byte written\n", calls,
	       before, after);
	TL_CHECK(calls == 0 && before == 0 && after == 1, "fault-in calls %ld, resident %zu then %zu", calls,
		 before, after);
	secretmem_free(big);

	/* a public region: faulted in whole at creation */
	struct fi_counts c3 = { 0, 0, 0 };
	size_t t0, k0;
	sm_fault_in_counts(&t0, &k0);
	struct secretmem_region *r = secretmem_region_create(16 * ps, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	sm_fault_in_counts(&c3.touched, &c3.read);
	size_t rres = resident(secretmem_region_data(r), 16 * ps, ps);
	printf("a 16-page region: %zu pages touched at creation, %zu resident\n", c3.touched - t0, rres);
	TL_CHECK(c3.touched - t0 == 16 && c3.read == k0 && rres == 16, "a region is not faulted in whole");
	secretmem_region_destroy(r);
	for (int i = 0; i < N; i++)
		secretmem_free(blk[i]);
	printf("ok: mmap-time regime: pages ready without a touch, faulted by the program's first write\n");
	return TL_PASS;
}
