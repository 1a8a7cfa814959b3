/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_abort_interior - free, realloc and usable_size of a pointer into
 * the middle of a live block are fatal: SIGABRT and the exact line
 * "secretmem: fatal: invalid pointer (not the start of a block)".
 */
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define MSG "secretmem: fatal: invalid pointer (not the start of a block)"

enum { FREE, REALLOC, USABLE };

struct c {
	size_t size, off;
	int op;
};

static int run(void *arg)
{
	struct c *c = arg;
	unsigned char *p = secretmem_malloc(c->size);

	if (!p)
		return 2;
	switch (c->op) {
	case FREE: secretmem_free(p + c->off); break;
	case REALLOC: p = secretmem_realloc(p + c->off, 10); break;
	case USABLE: printf("usable %zu\n", secretmem_usable_size(p + c->off)); break;
	}
	printf("the call returned\n");
	return 3;
}

int main(void)
{
	static struct c cases[] = {
		{ 64, 1, FREE }, { 64, 16, FREE }, { 64, 63, FREE }, { 20, 4, FREE }, { 4096, 2048, FREE },
		{ 16384, 16, FREE }, { 40000, 16, FREE }, { 40000, 4096, FREE }, { 40000, 39999, FREE },
		{ 64, 8, REALLOC }, { 40000, 4096, REALLOC }, { 64, 4, USABLE }, { 40000, 32, USABLE },
	};
	static const char *on[] = { "free", "realloc", "usable_size" };
	char name[128];

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(name, sizeof(name), "%s(p + %zu) of a %zu-byte block", on[cases[i].op], cases[i].off,
			 cases[i].size);
		tl_expect_fatal(name, run, &cases[i], MSG);
	}
	return TL_PASS;
}
