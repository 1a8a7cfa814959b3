/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_uaf_sample - what secretmem_malloc(3) says the write-after-free
 * check does not cover: above 128 bytes a freed small slot is checked at a
 * sample (its first and last 64 bytes, the first 64 bytes of each page that
 * begins inside it).  A write into a freed 512-byte block at byte 200, or
 * into a freed 16 KiB block at byte 5000, is not detected, and the block
 * handed out there next keeps that byte, through calloc too.  A 128-byte block is checked in
 * full: the same write at byte 100 is fatal (t_alloc_abort_uaf), which also
 * shows the sample test below is not vacuous.
 */
#include <stdint.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

static int reuse_keeps(size_t size, size_t off, int with_calloc)
{
	unsigned char *p = secretmem_malloc(size);

	if (!p) {
		printf("malloc(%zu) failed\n", size);
		return 0;
	}
	secretmem_free(p);
	tl_unpoison(p + off, 1);
	p[off] = 0x5a;
	unsigned char *q = with_calloc ? secretmem_calloc(1, size) : secretmem_malloc(size);
	if (q != p) {
		printf("malloc(%zu) did not hand out the freed block again (%p, %p)\n", size, (void *)p, (void *)q);
		return 0;
	}
	if (q[off] != 0x5a) {
		printf("byte %zu of the %zu-byte block is 0x%02x, expected the written 0x5a\n", off, size, q[off]);
		return 0;
	}
	q[off] = 0;
	secretmem_free(q);
	printf("ok: a write at byte %zu of a freed %zu-byte block: not detected, kept by the next block (%s)\n",
	       off, size, with_calloc ? "calloc" : "malloc");
	return 1;
}

int main(void)
{
	if (!reuse_keeps(512, 200, 0) || !reuse_keeps(16384, 5000, 0) || !reuse_keeps(160, 80, 0) ||
	    !reuse_keeps(512, 300, 1))
		return TL_FAILED;
	return TL_PASS;
}
