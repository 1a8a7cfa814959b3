/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_abort_uaf - a write into a freed block is detected when the slot
 * is handed out again (the next malloc of the class in the same thread reuses
 * the most recently freed slot): SIGABRT and the exact line
 * "secretmem: fatal: freed block was modified (write after free)".
 */
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define MSG "secretmem: fatal: freed block was modified (write after free)"

struct c {
	size_t size, off;
};

static int run(void *arg)
{
	const struct c *c = arg;
	unsigned char *p = secretmem_malloc(c->size);

	if (!p)
		return 2;
	secretmem_free(p);
	tl_unpoison(p + c->off, 1);
	p[c->off] = 1;
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
		{ 32, 0 }, { 32, 31 }, { 48, 17 }, { 20, 19 }, { 1, 15 }, { 512, 256 }, { 4096, 4095 }, { 16384, 8000 },
	};
	char name[128];

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "write after free at byte %zu of a %zu-byte block", cases[i].off,
			 cases[i].size);
		tl_expect_fatal(name, run, &cases[i], MSG);
	}
	return TL_PASS;
}
