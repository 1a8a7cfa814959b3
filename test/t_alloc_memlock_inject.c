/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_memlock_inject - the newer kernels' fault-time memory-lock refusal,
 * simulated by injection (OS_OP_FAULT_IN fails with EFAULT): allocations
 * that need new pages fail with ENOMEM, blocks in pages already faulted still
 * work and stay intact, freed slots are reused, and after disarming
 * allocation works again.  A refused fault-in fails its allocation only; a
 * refused batch (the need plus pages ahead) is retried for the exact need.
 */
#include <errno.h>
#include <string.h>
#include "internal.h"
#include "tlib.h"

#define CAP 1000000

static unsigned char *small[CAP];

static void *mid[1000];

/* Allocate n-byte blocks into mid[] until NULL; they are freed at the end. */
static void fill_until_null(size_t n, int *count)
{
	for (*count = 0;; (*count)++) {
		TL_CHECK(*count < 1000, "malloc(%zu) never refused with fault-in failing", n);
		errno = 0;
		mid[*count] = secretmem_malloc(n);
		if (!mid[*count])
			break;
		TL_CHECK(secretmem_usable_size(mid[*count]) >= n, "usable");
	}
	TL_CHECK(errno == ENOMEM, "malloc(%zu) with fault-in failing: errno %d (%s), expected ENOMEM", n, errno,
		 strerror(errno));
}

int main(void)
{
	/* those kernels' way: new pages faulted in from the kernel side */
	sm_fault_regime_force(SM_REGIME_FAULT);
	tl_need_secretmem();
	/* the refusals here are simulated; a real limit this small would
	 * refuse the mappings themselves (this kernel charges at mmap time)
	 * and shrink the chunks the cases below place their runs in */
	int unlimited;
	size_t limit, locked;
	sm_memlock_figures(&unlimited, &limit, &locked);
	if (!unlimited && limit < ((size_t)8 << 20))
		tl_skip("a memory-lock limit under 8 MiB (without CAP_IPC_LOCK) would refuse real mappings");

	/* some blocks in faulted pages */
	for (int i = 0; i < 100; i++) {
		small[i] = secretmem_malloc(32);
		TL_CHECK(small[i], "malloc: %s", strerror(errno));
		tl_fill(small[i], 32, (uint64_t)i + 1);
	}
	/* one refused fault-in of a batch: the first chunk (16 pages) has
	 * faulted the 32-byte slab's page; a 20,000-byte run (5 pages) fits
	 * in it past that page, so its fault-in asks for pages ahead too (as
	 * many as the chunk has faulted); refused, it is retried for the
	 * exact need, granted */
	struct secretmem_stats s0, s1;
	TL_CHECK(secretmem_stats(&s0) == 0, "stats");
	TL_CHECK(s0.regions == 1 && s0.pages_mapped == 16 && s0.pages_faulted >= 1,
		 "the first chunk: %zu chunks, %zu pages mapped, %zu faulted (expected 1, 16, 1 or more)", s0.regions,
		 s0.pages_mapped, s0.pages_faulted);
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 0);
	unsigned char *retried = secretmem_malloc(20000); /* kept to the end: freed, it would serve a later run */
	long tries = sm_inject_count(OS_OP_FAULT_IN);
	TL_CHECK(retried, "a refused batch was not retried for the exact need: malloc(20000): %s (%ld fault-ins)",
		 strerror(errno), tries);
	TL_CHECK(tries == 2, "malloc(20000) made %ld fault-ins, expected 2 (the refused batch, the exact retry)", tries);
	TL_CHECK(secretmem_stats(&s1) == 0 && s1.regions == 1, "the run opened a chunk of its own");
	tl_fill(retried, 20000, 7);
	printf("ok: a refused batch is retried for the exact need\n");

	unsigned char *big = secretmem_malloc(100000);
	TL_CHECK(big, "malloc(100000): %s", strerror(errno));
	tl_fill(big, 100000, 999);

	/* one allocation refused: every fault-in fails while it runs; then
	 * the same allocation works */
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 1);
	errno = 0;
	void *x = secretmem_malloc(200000);
	TL_CHECK(x == NULL && errno == ENOMEM, "fault-in refused: malloc(200000) = %p, errno %d", x, errno);
	TL_CHECK(sm_inject_count(OS_OP_FAULT_IN) >= 1, "malloc(200000) did not fault pages in from the kernel side");
	sm_inject_fault(OS_OP_FAULT_IN, 0, 0, 0);
	x = secretmem_malloc(200000);
	TL_CHECK(x, "malloc(200000) after the refusal: %s", strerror(errno));
	secretmem_free(x);
	printf("ok: a refused fault-in fails the allocation, the next one works\n");

	/* persistent: the kernel refuses every new page */
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 1);
	int n32, n5k;
	long calls;
	int k = 100;
	/* 32-byte blocks: those in faulted pages succeed, then ENOMEM */
	for (;; k++) {
		TL_CHECK(k < CAP, "malloc(32) never refused with fault-in failing");
		errno = 0;
		small[k] = secretmem_malloc(32);
		if (!small[k])
			break;
		tl_fill(small[k], 32, (uint64_t)k + 1);
	}
	TL_CHECK(errno == ENOMEM, "malloc(32) with fault-in failing: errno %d (%s)", errno, strerror(errno));
	n32 = k - 100;
	fill_until_null(5000, &n5k);
	errno = 0;
	TL_CHECK(secretmem_malloc(300000) == NULL && errno == ENOMEM, "malloc(300000) with fault-in failing: errno %d",
		 errno);
	calls = sm_inject_count(OS_OP_FAULT_IN);
	TL_CHECK(calls >= 1, "no fault-in was attempted");
	printf("with fault-in refused: %d more 32-byte and %d 5000-byte blocks fit in faulted pages, then ENOMEM "
	       "(%ld refused fault-ins)\n",
	       n32, n5k, calls);

	/* existing blocks intact; a freed slot is reused with no new page */
	for (int i = 0; i < k; i++)
		TL_CHECK(tl_check(small[i], 32, (uint64_t)i + 1), "block %d changed", i);
	TL_CHECK(tl_check(big, 100000, 999), "large block changed");
	TL_CHECK(tl_check(retried, 20000, 7), "the retried run changed");
	secretmem_free(small[0]);
	small[0] = secretmem_malloc(32);
	TL_CHECK(small[0], "malloc(32) into a freed slot with fault-in failing: %s", strerror(errno));
	tl_fill(small[0], 32, 1);

	/* disarmed: allocation works again */
	sm_inject_fault(OS_OP_FAULT_IN, 0, 0, 0);
	void *a = secretmem_malloc(32), *b = secretmem_malloc(5000), *c = secretmem_malloc(300000);
	TL_CHECK(a && b && c, "after disarming: %p %p %p (%s)", a, b, c, strerror(errno));
	for (int i = 0; i < k; i++)
		TL_CHECK(tl_check(small[i], 32, (uint64_t)i + 1), "block %d changed", i);
	secretmem_free(a);
	secretmem_free(b);
	secretmem_free(c);
	for (int i = 0; i < k; i++)
		secretmem_free(small[i]);
	for (int i = 0; i < n5k; i++)
		secretmem_free(mid[i]);
	secretmem_free(big);
	secretmem_free(retried);
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0 && st.live_allocations == 0, "live blocks left: %zu", st.live_allocations);
	printf("ok: fault-time refusal is ENOMEM, recovery after disarming\n");
	return TL_PASS;
}
