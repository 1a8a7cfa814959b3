/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_realloc - realloc keeps the contents when growing and shrinking,
 * zeroizes the old block when it moves, realloc(NULL, n) is malloc,
 * realloc(p, 0) frees, a failed realloc leaves the block alone.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

/*
 * Check that [p, p+n) of a freed block holds only zeroes.  Small blocks stay
 * in mapped slab pages; a freed large run may have been made inaccessible,
 * in which case its pages are opened for reading for the check and closed
 * again (an unmapped run has no content left to check).
 */
static int freed_is_zero(const unsigned char *p, size_t n)
{
	char line[512];
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	uintptr_t hi = ((uintptr_t)p + n + ps - 1) & ~(uintptr_t)(ps - 1);
	int reopened = 0;

	if (tl_maps_line(p, line, sizeof(line)) != 0)
		return 1; /* unmapped */
	char *perm = strchr(line, ' ');
	if (perm && perm[1] != 'r') {
		/* a secret run kept but closed; a plain reservation reads zero */
		TL_CHECK(mprotect((void *)lo, hi - lo, PROT_READ) == 0, "mprotect: %s", strerror(errno));
		reopened = 1;
	}
	tl_unpoison(p, n);
	int zero = 1;
	for (size_t i = 0; i < n; i++)
		if (p[i])
			zero = 0;
	if (reopened)
		mprotect((void *)lo, hi - lo, PROT_NONE);
	return zero;
}

int main(void)
{
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));

	/* a chain of sizes through small classes, large runs and back */
	static const size_t sizes[] = { 16, 24, 40, 200, 5000, 16384, 20000, 100000, 300000, 99000,
					17000, 16000, 1000, 30, 17, 1 };
	size_t n = 5;
	uint64_t seed = 1;
	unsigned char *p = secretmem_malloc(n);
	TL_CHECK(p, "malloc: %s", strerror(errno));
	tl_fill(p, n, seed);
	int moves = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t m = sizes[i], keep = n < m ? n : m;
		unsigned char *old = p;
		size_t oldn = secretmem_usable_size(old);
		p = secretmem_realloc(old, m);
		TL_CHECK(p, "realloc(%zu -> %zu): %s", n, m, strerror(errno));
		TL_CHECK(secretmem_usable_size(p) >= m, "realloc to %zu: usable %zu", m, secretmem_usable_size(p));
		TL_CHECK(secretmem_owns(p) == 1, "realloc result not owned");
		TL_CHECK(tl_check(p, keep, seed), "realloc(%zu -> %zu): the first %zu bytes changed", n, m, keep);
		if (m > 16384)
			TL_CHECK(((uintptr_t)p + secretmem_usable_size(p)) % (uintptr_t)sysconf(_SC_PAGESIZE) == 0,
				 "realloc(%zu -> %zu): the large block's end is not at the guard page", n, m);
		if (p != old) {
			moves++;
			TL_CHECK(secretmem_owns(old) == 0, "realloc moved the block but the old one is still live");
			TL_CHECK(freed_is_zero(old, oldn),
				 "realloc(%zu -> %zu) moved %p -> %p and left the old block's %zu bytes not zeroized",
				 n, m, (void *)old, (void *)p, oldn);
		}
		n = m;
		seed++;
		tl_fill(p, n, seed);
	}
	TL_CHECK(moves >= 5, "only %d of the reallocs moved the block", moves);
	secretmem_free(p);
	printf("ok: realloc chain, %d moves, old blocks zeroized\n", moves);

	/* growing within a small class: 17 -> 20 bytes is the same 20 class,
	 * 20 -> 21 must move; shrinking may stay in place */
	p = secretmem_malloc(17);
	tl_fill(p, 17, 99);
	unsigned char *q = secretmem_realloc(p, 20);
	TL_CHECK(q && tl_check(q, 17, 99), "realloc(17 -> 20)");
	q = secretmem_realloc(q, 4000);
	TL_CHECK(q && tl_check(q, 17, 99), "realloc(20 -> 4000)");
	q = secretmem_realloc(q, 8);
	TL_CHECK(q && secretmem_usable_size(q) >= 8 && tl_check(q, 8, 99), "realloc(4000 -> 8)");
	secretmem_free(q);

	/* realloc(NULL, n) acts as malloc */
	p = secretmem_realloc(NULL, 100);
	TL_CHECK(p && secretmem_owns(p) && secretmem_usable_size(p) == 112, "realloc(NULL, 100): %p usable %zu",
		 (void *)p, p ? secretmem_usable_size(p) : 0);
	for (size_t i = 0; i < 112; i++)
		TL_CHECK(p[i] == 0, "realloc(NULL, 100) not zero-filled");
	tl_fill(p, 100, 7);

	/* a failed realloc leaves the block alone */
	errno = 0;
	q = secretmem_realloc(p, SIZE_MAX - 64);
	TL_CHECK(q == NULL && errno == ENOMEM, "realloc(p, SIZE_MAX-64) = %p errno %d", (void *)q, errno);
	TL_CHECK(secretmem_owns(p) && tl_check(p, 100, 7), "failed realloc changed the block");

	/* realloc(p, 0) frees, returns NULL, leaves errno alone */
	errno = 4242;
	q = secretmem_realloc(p, 0);
	TL_CHECK(q == NULL, "realloc(p, 0) returned %p", (void *)q);
	TL_CHECK(errno == 4242, "realloc(p, 0) changed errno to %d", errno);
	TL_CHECK(secretmem_owns(p) == 0, "realloc(p, 0) did not free p");
	TL_CHECK(freed_is_zero(p, 112), "realloc(p, 0) did not zeroize p");
	/* the slot is free for reuse */
	q = secretmem_malloc(100);
	TL_CHECK(q, "malloc after realloc(p, 0)");
	secretmem_free(q);

	/* stats agree: nothing left */
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	TL_CHECK(st.live_allocations == 0 && st.bytes_in_use == 0, "after the realloc tests: %zu live, %zu bytes",
		 st.live_allocations, st.bytes_in_use);
	printf("ok: realloc(NULL, n), realloc(p, 0), failed realloc\n");
	return TL_PASS;
}
