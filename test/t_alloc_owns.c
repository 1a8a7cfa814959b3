/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_owns - secretmem_owns() and secretmem_usable_size(): 1 only for the
 * start of a live block, never fatal, never touching the memory it is asked
 * about.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

int main(void)
{
	int on_stack = 0;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));

	/* before any allocation */
	TL_CHECK(secretmem_owns(NULL) == 0, "owns(NULL) before first use");
	TL_CHECK(secretmem_owns(&on_stack) == 0, "owns(stack) before first use");

	unsigned char *p = secretmem_malloc(64);
	unsigned char *big = secretmem_malloc(50000);
	TL_CHECK(p && big, "malloc: %s", strerror(errno));
	void *libc = malloc(64);
	TL_CHECK(libc, "libc malloc");

	TL_CHECK(secretmem_owns(NULL) == 0, "owns(NULL)");
	TL_CHECK(secretmem_owns(&on_stack) == 0, "owns(stack pointer)");
	TL_CHECK(secretmem_owns(libc) == 0, "owns(libc malloc pointer)");
	TL_CHECK(secretmem_owns((void *)main) == 0, "owns(code pointer)");
	TL_CHECK(secretmem_owns((void *)(uintptr_t)1) == 0, "owns(1)");
	TL_CHECK(secretmem_owns((void *)(uintptr_t)ps) == 0, "owns(page 1)");
	TL_CHECK(secretmem_owns((void *)(UINTPTR_MAX - 15)) == 0, "owns(top of address space)");
	TL_CHECK(secretmem_owns((void *)(uintptr_t)0x7ff000000000ull) == 0, "owns(unmapped address)");

	TL_CHECK(secretmem_owns(p) == 1, "owns(p)");
	TL_CHECK(secretmem_owns(big) == 1, "owns(big)");
	for (int off = 1; off < 64; off++)
		TL_CHECK(secretmem_owns(p + off) == 0, "owns(p + %d) (interior)", off);
	TL_CHECK(secretmem_owns(big + 16) == 0, "owns(big + 16) (interior, aligned)");
	TL_CHECK(secretmem_owns(big + 4096) == 0, "owns(big + 4096) (interior, page aligned)");
	TL_CHECK(secretmem_owns(big - 16) == 0, "owns(big - 16) (slack before a large block)");

	TL_CHECK(secretmem_usable_size(NULL) == 0, "usable_size(NULL)");
	TL_CHECK(secretmem_usable_size(p) == 64, "usable_size(p) = %zu", secretmem_usable_size(p));
	TL_CHECK(secretmem_usable_size(big) == 50000, "usable_size(big) = %zu", secretmem_usable_size(big));

	/* a page of a chunk that was never used: owns must not fault on it */
	unsigned char *far = p + 64 * ps;
	TL_CHECK(far == big || secretmem_owns(far) == 0, "owns(p + 64 pages)");

	/* after free */
	secretmem_free(p);
	secretmem_free(big);
	TL_CHECK(secretmem_owns(p) == 0, "owns(p) after free");
	TL_CHECK(secretmem_owns(big) == 0, "owns(big) after free");

	/* many blocks: each owned, its neighbours' interiors not */
	enum { N = 500 };
	static unsigned char *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = secretmem_malloc((size_t)(i % 200) + 1);
		TL_CHECK(b[i], "malloc");
	}
	for (int i = 0; i < N; i++) {
		TL_CHECK(secretmem_owns(b[i]) == 1, "owns(b[%d])", i);
		TL_CHECK(secretmem_owns(b[i] + 1) == 0, "owns(b[%d] + 1)", i);
	}
	for (int i = 0; i < N; i += 2)
		secretmem_free(b[i]);
	for (int i = 0; i < N; i++)
		TL_CHECK(secretmem_owns(b[i]) == (i % 2), "owns(b[%d]) after freeing the even ones", i);
	for (int i = 1; i < N; i += 2)
		secretmem_free(b[i]);
	free(libc);
	printf("ok: owns and usable_size\n");
	return TL_PASS;
}
