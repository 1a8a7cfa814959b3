/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_abort_uaf - a write into a freed block is detected when the slot
 * is handed out again (the next malloc of the class in the same thread reuses
 * the most recently freed slot): SIGABRT and the exact line
 * "secretmem: fatal: freed block was modified (write after free)".
 * Slots up to 128 bytes: any byte; larger ones: a byte of the sample (the
 * first and last 64 bytes, the first 64 bytes of each page that begins
 * inside the block; t_alloc_uaf_sample holds what lies outside it).
 * Where the CPU has AVX2, every case again with the check's generic version.
 */
#include <string.h>
#include "secretmem.h"
#include "slab.h"
#include "tlib.h"

#define MSG "secretmem: fatal: freed block was modified (write after free)"
#define PAGE_START ((size_t)-1)

struct c {
	size_t size, off;
};

static int run(void *arg)
{
	const struct c *c = arg;
	unsigned char *p = secretmem_malloc(c->size);

	if (!p)
		return 2;
	size_t off = c->off;
	if (off == PAGE_START) /* 10 bytes into the first page that begins after p */
		off = (size_t)(((uintptr_t)p / 4096 + 1) * 4096 - (uintptr_t)p) + 10;
	if (off >= secretmem_usable_size(p)) {
		printf("no page begins inside the %zu-byte block at %p\n", c->size, (void *)p);
		return 6;
	}
	secretmem_free(p);
	tl_unpoison(p + off, 1);
	p[off] = 1;
	/* malloc the class until p comes back: that one must be fatal */
	for (int i = 0; i < 100000; i++) {
		unsigned char *q = secretmem_malloc(c->size);
		if (!q) {
			printf("malloc failed after %d blocks\n", i);
			return 4;
		}
		if (q == p) {
			printf("the modified slot was handed out again (after %d other blocks) without a fatal error\n", i);
			return 3;
		}
	}
	printf("the modified slot was never handed out again\n");
	return 5;
}

int main(void)
{
	static struct c cases[] = {
		{ 32, 0 }, { 32, 31 }, { 48, 17 }, { 20, 19 }, { 1, 15 }, { 100, 57 }, { 128, 70 }, { 129, 0 },
		{ 129, 159 }, { 512, 0 }, { 512, 63 }, { 512, 448 }, { 512, 511 }, { 4096, 4095 }, { 5120, PAGE_START },
		{ 16384, 8192 + 33 }, { 16384, 12288 },
	};
	char name[128];

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	/* the allocator's start-up picks the check's version (AVX2 or not) */
	secretmem_free(secretmem_malloc(1));
	int avx2 = sm_have_avx2;
	for (int generic = 0; generic <= avx2; generic++) {
		const char *how = !avx2 ? "" : generic ? ", generic check" : ", AVX2 check";
		sm_have_avx2 = generic ? 0 : avx2; /* for the children */
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (cases[i].off == PAGE_START)
				snprintf(name, sizeof(name),
					 "write after free 10 bytes into a page inside a %zu-byte block%s",
					 cases[i].size, how);
			else
				snprintf(name, sizeof(name), "write after free at byte %zu of a %zu-byte block%s",
					 cases[i].off, cases[i].size, how);
			tl_expect_fatal(name, run, &cases[i], MSG);
		}
	}
	return TL_PASS;
}
