/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_aligned - sm_alloc_aligned (the heap module's memalign): every
 * power-of-two alignment from 1 byte to 2 MiB, sizes across small classes
 * and large blocks; the start is aligned, usable size >= request, the whole
 * block is writable, free/realloc/usable_size accept the start, and a
 * non-power-of-two alignment is EINVAL.  The first call of the process
 * (before any malloc) gets what it asked for.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

int main(void)
{
	static const size_t sizes[] = { 0, 1, 15, 17, 100, 1000, 4096, 5000, 16384, 16385, 70000, 300000 };
	unsigned n = 0;

	/* the first allocator call of the process (the class tables are
	 * filled at start-up: before the fix this gave 16 usable bytes) */
	unsigned char *first = sm_alloc_aligned(1, 105);
	TL_CHECK(first && secretmem_usable_size(first) >= 105, "first call: %zu usable bytes for 105",
		 first ? secretmem_usable_size(first) : 0);
	secretmem_free(first);

	for (size_t align = 1; align <= ((size_t)2 << 20); align <<= 1) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t size = sizes[i];
			unsigned char *p = sm_alloc_aligned(align, size);
			TL_CHECK(p, "align %zu size %zu: %s", align, size, strerror(errno));
			TL_CHECK(((uintptr_t)p & (align - 1)) == 0, "align %zu size %zu: %p", align, size, (void *)p);
			TL_CHECK(((uintptr_t)p & 15) == 0, "align %zu size %zu: %p not 16-aligned", align, size,
				 (void *)p);
			TL_CHECK(secretmem_owns(p), "align %zu size %zu: not owned", align, size);
			size_t u = secretmem_usable_size(p);
			TL_CHECK(u >= size, "align %zu size %zu: usable %zu", align, size, u);
			for (size_t k = 0; k < u; k++)
				TL_CHECK(p[k] == 0, "align %zu size %zu: byte %zu not zero", align, size, k);
			tl_fill(p, u, align + size);
			if (i % 2) {
				unsigned char *q = secretmem_realloc(p, size + 33);
				TL_CHECK(q, "realloc: %s", strerror(errno));
				TL_CHECK(tl_check(q, u < size + 33 ? u : size + 33, align + size),
					 "realloc lost the contents (align %zu size %zu)", align, size);
				p = q;
			}
			secretmem_free(p);
			n++;
		}
	}
	static const size_t bad[] = { 0, 3, 24, 48, 4097, (size_t)1 << 63 | 1 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		TL_CHECK(sm_alloc_aligned(bad[i], 16) == NULL && errno == EINVAL, "align %zu: not EINVAL", bad[i]);
	}
	errno = 0;
	TL_CHECK(sm_alloc_aligned(4096, SIZE_MAX - 4096) == NULL && errno == ENOMEM, "huge: not ENOMEM");
	errno = 0;
	TL_CHECK(sm_alloc_aligned((size_t)1 << 62, 16) == NULL && errno == ENOMEM, "huge align: not ENOMEM");

	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.live_allocations == 0, "%zu blocks left live", st.live_allocations);
	printf("ok: %u aligned blocks, alignments 1 B to 2 MiB\n", n);
	return TL_PASS;
}
