/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_large_uaf - a write into a freed large block (a run kept for
 * reuse, or a cached region of its own) is detected when the block is
 * handed out again, if it hits the sampled bytes: the first and the last 64
 * bytes of the block and the first 64 bytes of every page inside it.  The
 * next malloc of the same size gets the most recently freed run back:
 * SIGABRT and the exact line
 * "secretmem: fatal: freed block was modified (write after free)".
 * Where only some of a lazy block's pages hold memory, each resident piece
 * is sampled alike, and a piece shorter than 128 bytes is read whole.
 */
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#define MSG "secretmem: fatal: freed block was modified (write after free)"

struct c {
	size_t size;
	long off; /* from the block's start; negative: from its end */
	int page; /* 1: off is from the second page boundary inside the block */
};

static int run(void *arg)
{
	const struct c *c = arg;
	unsigned char *p = secretmem_malloc(c->size);

	if (!p)
		return 2;
	size_t u = secretmem_usable_size(p);
	unsigned char *at = c->off < 0 ? p + u + c->off : p + c->off;
	if (c->page)
		at = (unsigned char *)((((uintptr_t)p + 4095) & ~(uintptr_t)4095) + 4096 + (size_t)c->off);
	secretmem_free(p);
	tl_unpoison(at, 1);
	*at = 1;
	unsigned char *q = secretmem_malloc(c->size);
	printf("the modified block was handed out again (%s) without a fatal error\n", q == p ? "same" : "other");
	return 3;
}

int main(void)
{
	static struct c cases[] = {
		{ 20000, 0, 0 },  { 20000, 63, 0 },  { 20000, -1, 0 },  { 20000, -64, 0 },
		{ 100000, 0, 0 }, { 100000, 5, 1 },  { 100000, 63, 1 }, { 100000, -1, 0 },
		{ 1048576, 0, 0 }, { 1048576, 1, 1 }, /* the largest run class */
		{ 3 << 20, 0, 0 }, { 3 << 20, 8, 1 }, { 3 << 20, -1, 0 }, /* a region of its own */
		/* a block that starts 112 bytes before a page boundary: in a lazy
		 * chunk the check reads the resident page's 112 bytes of it, all
		 * (the last case: run only where chunks are lazy) */
		{ 20580, 100, 0 },
	};
	size_t ncases = sizeof(cases) / sizeof(cases[0]);
	char name[160];

	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	if (sysconf(_SC_PAGESIZE) != 4096) {
		printf("skip: written for 4 KiB pages\n");
		return TL_SKIP;
	}
	/* chunks are lazy with the secret backend where the mapping is charged
	 * at mmap; elsewhere byte 100 of that block is outside the sample */
	if (tl_under_valgrind() || secretmem_default_backend() != SECRETMEM_BACKEND_SECRET ||
	    sm_fault_regime() != SM_REGIME_MMAP) {
		printf("chunks are not lazy here: the case of a resident piece under 128 bytes is left out\n");
		ncases--;
	}
	for (size_t i = 0; i < ncases; i++) {
		snprintf(name, sizeof(name), "write after free %s %ld of a %zu-byte block",
			 cases[i].page ? "at byte" : cases[i].off < 0 ? "at end" : "at byte", cases[i].off,
			 cases[i].size);
		if (cases[i].page)
			strcat(name, " (from a page boundary)");
		tl_expect_fatal(name, run, &cases[i], MSG);
	}
	return TL_PASS;
}
