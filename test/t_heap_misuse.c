/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_misuse - heap mode's misuse policy, as documented in
 * secretmem-heap(7): a double free, the free or realloc of an interior
 * pointer of secret memory, and the free or realloc of a freed block whose
 * pages a trim took back ("stale") are fatal with the library's fixed message
 * (SIGABRT), as glibc's own checks abort; a pointer the module does not own
 * goes to glibc's free, which aborts for a stack address ("free(): invalid
 * pointer") and frees a real glibc block without a word (realloc moves such
 * a block into secret memory, unless it is above the huge threshold);
 * malloc_usable_size
 * of an interior pointer is 0, never fatal.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

#pragma GCC diagnostic ignored "-Wfree-nonheap-object" /* the misuse is the point */

extern void *__libc_malloc(size_t size);

static int child(const char *c)
{
	TL_CHECK(hr_active(), "the heap module is not active");
	char *volatile p = malloc(64);
	TL_CHECK(p, "malloc");
	if (strcmp(c, "double") == 0) {
		free(p);
		free(p);
	} else if (strcmp(c, "double-large") == 0) {
		char *volatile q = malloc(100000);
		free(q);
		free(q);
	} else if (strcmp(c, "stale") == 0 || strcmp(c, "stale-realloc") == 0) {
		/* a freed run whose pages a trim took back (p, live, keeps the
		 * chunk): its address is still in the module's secret pages */
		char *volatile q = malloc(16712);
		free(q);
		malloc_trim(0);
		TL_CHECK(hr_where(q) == 's', "the chunk went away: nothing to check");
		TL_CHECK(malloc_usable_size(q) == 0, "usable size of a stale pointer into secret pages");
		if (c[5] == '-')
			q = realloc(q, 100);
		else
			free(q);
	} else if (strcmp(c, "interior") == 0) {
		free(p + 8);
	} else if (strcmp(c, "interior-realloc") == 0) {
		p = realloc(p + 16, 200);
	} else if (strcmp(c, "stack") == 0) {
		char buf[64];
		free(buf + (p[0] & 1)); /* glibc's check: invalid pointer */
	} else if (strcmp(c, "glibc-block") == 0) {
		/* a block of glibc's own (as before the module took over) */
		char *g = __libc_malloc(100);
		TL_CHECK(g && hr_where(g) == 'o', "__libc_malloc");
		TL_CHECK(malloc_usable_size(g) >= 100, "usable size of a glibc block");
		memset(g, 0x5a, 100);
		g = realloc(g, 5000);
		TL_CHECK(g && hr_where(g) == 's' && g[99] == 0x5a, "realloc moves a glibc block into secret memory");
		char *h = __libc_malloc((size_t)2 << 20);
		TL_CHECK(h && hr_where(h) == 'o', "__libc_malloc 2 MiB");
		h = realloc(h, (size_t)3 << 20);
		TL_CHECK(h && hr_where(h) == 'o', "realloc above the huge threshold stays glibc's");
		free(h);
		free(g);
		TL_CHECK(malloc_usable_size(p + 8) == 0, "usable size of an interior pointer");
		free(p);
		printf("child ok\n");
		return 0;
	}
	printf("survived\n");
	return 0;
}

static void expect(const char *self, const char *c, const char *line)
{
	char out[8192];
	const char *env[] = { "SECRETMEM_TEST_NOCORE=1", NULL };
	int st = hr_run(self, c, 1, env, out, sizeof(out));

	printf("%s: %s\n%s", c, tl_status_str(st), out);
	if (!line) {
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "%s", c);
		return;
	}
	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: not SIGABRT", c);
	TL_CHECK(strstr(out, line), "%s: want \"%s\"", c, line);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		tl_no_core();
		return child(argv[1]);
	}
	tl_need_secretmem();
	hr_module();
	expect(argv[0], "double", "secretmem: fatal: double free");
	expect(argv[0], "double-large", "secretmem: fatal: double free");
	expect(argv[0], "stale", "secretmem: fatal: invalid pointer (not allocated by secretmem)");
	expect(argv[0], "stale-realloc", "secretmem: fatal: invalid pointer (not allocated by secretmem)");
	expect(argv[0], "interior", "secretmem: fatal: invalid pointer (not the start of a block)");
	expect(argv[0], "interior-realloc", "secretmem: fatal: invalid pointer (not the start of a block)");
	expect(argv[0], "stack", "free(): invalid pointer");
	expect(argv[0], "glibc-block", NULL);
	printf("pass\n");
	return 0;
}
