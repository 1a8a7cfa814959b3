/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_regime - the memory-lock regime the library probes (right
 * after its first successful memfd_secret call, in-process or in the
 * child) agrees with the kernel: a chunk's
 * mapping is VM_LOCKED ("lo" in /proc/self/smaps VmFlags) exactly when the
 * probe said "charged at mmap time", and not locked when it said "charged at
 * fault time".  A kernel with secret memory and no sandbox gives an answer,
 * once: the memfd_secret calls of later chunks and regions do not probe
 * again.  A 3 MiB block with one byte written has at most 3 pages resident
 * in the mmap-time regime (secretmem_malloc(3)), all in the other.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"
#include "tlib.h"

int main(void)
{
	if (tl_under_valgrind())
		tl_skip("valgrind runs no clone() child: the regime is not probed under it");
	tl_need_secretmem();
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_SECRET, "the allocator does not use secret memory");
	int lo = tl_has_vmflag(p, "lo"), regime = sm_fault_regime();
	TL_CHECK(lo >= 0, "smaps VmFlags of the chunk: %s", strerror(-lo));
	printf("probed regime %d (1 mmap-time, 2 fault-time, 0 unknown); chunk VmFlags %s 'lo'\n", regime,
	       lo ? "show" : "do not show");
	TL_CHECK(regime != SM_REGIME_UNKNOWN, "the probe gave no answer on a kernel with secret memory");
	TL_CHECK(regime == (lo ? SM_REGIME_MMAP : SM_REGIME_FAULT),
		 "probed regime %d, but the chunk's mapping is%s VM_LOCKED", regime, lo ? "" : " not");
	/* a second chunk and eight regions: more memfd_secret calls, no new probe */
	static void *blk[20000];
	struct secretmem_region *r[8];
	for (int i = 0; i < 20000; i++)
		TL_CHECK((blk[i] = secretmem_malloc(32)), "malloc: %s", strerror(errno));
	for (int i = 0; i < 8; i++)
		TL_CHECK((r[i] = secretmem_region_create(4096, 0)), "region: %s", strerror(errno));
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	printf("%zu chunks created, %d memfd_secret calls, %d regime probe(s)\n", st.regions_created, sm_memfd_calls(),
	       sm_fault_regime_probes());
	TL_CHECK(st.regions_created >= 2, "only %zu chunk: the test needs a second one", st.regions_created);
	TL_CHECK(sm_memfd_calls() >= (int)st.regions_created + 8, "%d memfd_secret calls for %zu chunks and 8 regions",
		 sm_memfd_calls(), st.regions_created);
	TL_CHECK(sm_fault_regime_probes() == 1, "%d regime probes in one process", sm_fault_regime_probes());
	for (int i = 0; i < 8; i++)
		secretmem_region_destroy(r[i]);
	for (int i = 0; i < 20000; i++)
		secretmem_free(blk[i]);
	secretmem_free(p);

	/* a large block (secretmem_malloc(3)): charged at mmap time, each
	 * page is faulted at its first touch; else all at the malloc */
	size_t big = (size_t)3 << 20, ps = (size_t)sysconf(_SC_PAGESIZE), n = big / ps, resident = 0;
	unsigned char *b = secretmem_malloc(big), *vec = malloc(n + 1);
	TL_CHECK(b && vec, "malloc(3 MiB): %s", strerror(errno));
	b[big / 2] = 1;
	unsigned char *lo_page = (unsigned char *)((uintptr_t)b & ~(uintptr_t)(ps - 1));
	TL_CHECK(mincore(lo_page, big, vec) == 0, "mincore: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		resident += vec[i] & 1;
	printf("3 MiB block, one byte written: %zu of %zu pages resident\n", resident, n);
	if (regime == SM_REGIME_MMAP)
		TL_CHECK(resident <= 3, "%zu pages of a large block resident in the mmap-time regime", resident);
	else
		TL_CHECK(resident >= n - 1, "only %zu of %zu pages of a large block resident", resident, n);
	secretmem_free(b);
	free(vec);
	printf("ok: the probed regime matches the chunk's VmFlags, probed once\n");
	return TL_PASS;
}
