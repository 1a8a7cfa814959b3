/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_run_faultin - chunk pages are faulted in as they are needed, in
 * either memory-lock regime (the one this kernel has): a program with one
 * small secret faults in one page (each first touch of a secret page costs
 * tens of microseconds), and a growing live set faults at most 32 pages more
 * than its slabs use (the kernel-side fault-in's look-ahead; none with the
 * user-space touch: t_alloc_fault_touch and t_alloc_fault_read hold the
 * exact figures of each).
 */
#include <errno.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

static void *blk[20000];

int main(void)
{
	struct secretmem_stats a, b;

	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	TL_CHECK(secretmem_stats(&a) == 0, "stats");
	printf("one 32-byte secret: %zu pages faulted, %zu mapped\n", a.pages_faulted, a.pages_mapped);
	TL_CHECK(a.pages_faulted == 1, "one small secret faulted in %zu pages", a.pages_faulted);
	secretmem_free(p);

	for (int i = 0; i < 20000; i++) {
		blk[i] = secretmem_malloc(32);
		TL_CHECK(blk[i], "malloc: %s", strerror(errno));
		memset(blk[i], 1, 32);
	}
	TL_CHECK(secretmem_stats(&b) == 0, "stats");
	size_t need = (20000 + 127) / 128; /* 128 slots of 32 bytes per 4 KiB page */
	printf("20,000 secrets: %zu pages faulted (%zu needed)\n", b.pages_faulted, need);
	TL_CHECK(b.pages_faulted >= need && b.pages_faulted <= need + 32 + 16,
		 "%zu pages faulted for %zu needed", b.pages_faulted, need);
	for (int i = 0; i < 20000; i++)
		secretmem_free(blk[i]);
	printf("ok: faulted as needed, bounded look-ahead\n");
	return TL_PASS;
}
