/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_abort_foreign - free, realloc and usable_size of a pointer this
 * allocator never handed out (stack, libc malloc, static data, an ordinary
 * mapping) are fatal: SIGABRT and the exact line
 * "secretmem: fatal: invalid pointer (not allocated by secretmem)".
 * secretmem_owns() of the same pointers is 0, never fatal.
 */
#include <string.h>
#include <sys/mman.h>
#include "secretmem.h"
#include "tlib.h"

#define MSG "secretmem: fatal: invalid pointer (not allocated by secretmem)"

static char static_buf[64];

enum { STACK, LIBC, STATIC, MMAP, WILD };
enum { FREE, REALLOC, USABLE };

struct c {
	int where, op;
};

static int run(void *arg)
{
	struct c *c = arg;
	char stack_buf[64];
	void *p = NULL;

	/* the allocator is in use: a live block exists */
	void *live = secretmem_malloc(64);
	if (!live)
		return 2;
	switch (c->where) {
	case STACK: p = stack_buf; break;
	case LIBC: p = malloc(64); break;
	case STATIC: p = static_buf; break;
	case MMAP:
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		break;
	case WILD: p = (void *)(uintptr_t)0x100000; break;
	}
	if (secretmem_owns(p) != 0) {
		printf("owns(foreign) != 0\n");
		return 4;
	}
	switch (c->op) {
	case FREE: secretmem_free(p); break;
	case REALLOC: p = secretmem_realloc(p, 100); break;
	case USABLE: printf("usable %zu\n", secretmem_usable_size(p)); break;
	}
	printf("the call returned\n");
	return 3;
}

int main(void)
{
	static const char *wn[] = { "stack", "libc malloc", "static", "mmap", "unmapped address" };
	static const char *on[] = { "free", "realloc", "usable_size" };
	char name[128];

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	for (int w = STACK; w <= WILD; w++) {
		for (int o = FREE; o <= USABLE; o++) {
			struct c c = { w, o };
			snprintf(name, sizeof(name), "%s(%s pointer)", on[o], wn[w]);
			tl_expect_fatal(name, run, &c, MSG);
		}
	}
	return TL_PASS;
}
