/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_large_fork - runs (large blocks in chunk pages) under the default
 * copy policy: the child's copy keeps every live run's contents at the same
 * address, its guard pages fault in the child too, freed runs come back
 * zeroed, new large blocks work without a new region for the freed runs'
 * classes, and nothing the child writes reaches the parent.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

#define N 12

static unsigned char *live[N];
static size_t sizes[N];

static int touch_child(void *arg)
{
	volatile unsigned char *q = arg;

	tl_no_core();
	tl_signal_default(SIGSEGV);
	*q = 1;
	return 3;
}

static int child(void *arg)
{
	(void)arg;
	for (int i = 0; i < N; i++) {
		if (i % 3 == 1)
			continue;
		if (!tl_check(live[i], sizes[i], 100 + (uint64_t)i)) {
			printf("child: live run %d (%zu bytes) lost its contents\n", i, sizes[i]);
			return 4;
		}
		/* the guard page above is inaccessible in the child too */
		int st = tl_run_child(touch_child, live[i] + secretmem_usable_size(live[i]), NULL, 0);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
			printf("child: no guard page after run %d: %s\n", i, tl_status_str(st));
			return 5;
		}
	}
	struct secretmem_stats a, b;
	secretmem_stats(&a);
	for (int i = 1; i < N; i += 3) {
		unsigned char *p = secretmem_malloc(sizes[i]);
		if (!p)
			return 6;
		for (size_t k = 0; k < sizes[i]; k++)
			if (p[k]) {
				printf("child: new block of %zu bytes not zero at %zu\n", sizes[i], k);
				return 7;
			}
		memset(p, 0xee, sizes[i]);
	}
	secretmem_stats(&b);
	if (b.regions_created != a.regions_created) {
		printf("child: %zu new regions for blocks whose runs were free\n", b.regions_created - a.regions_created);
		return 8;
	}
	for (int i = 0; i < N; i += 3)
		memset(live[i], 0xcc, sizes[i]); /* the parent must not see it */
	return 0;
}

int main(void)
{
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	for (int i = 0; i < N; i++) {
		sizes[i] = 16400 + (size_t)i * 21000;
		live[i] = secretmem_malloc(sizes[i]);
		TL_CHECK(live[i], "malloc(%zu): %s", sizes[i], strerror(errno));
		tl_fill(live[i], sizes[i], 100 + (uint64_t)i);
	}
	for (int i = 1; i < N; i += 3)
		secretmem_free(live[i]);
	int st = tl_run_child(child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));
	for (int i = 0; i < N; i++)
		if (i % 3 != 1)
			TL_CHECK(tl_check(live[i], sizes[i], 100 + (uint64_t)i), "parent: run %d changed by the child", i);
	printf("ok: live runs copied, guarded and private in the child; freed runs reused zeroed\n");
	return TL_PASS;
}
