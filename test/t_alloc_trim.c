/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_trim - freed memory stays mapped for reuse until secretmem_trim(),
 * which gives back every page without a live block: returns > 0, pages and
 * regions drop, live blocks survive, allocation works afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

static struct secretmem_stats get(void)
{
	struct secretmem_stats s;

	TL_CHECK(secretmem_stats(&s) == 0, "stats");
	return s;
}

static void *blk[3000];

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		size_t len = i % 300 == 0 ? 100000 : 16 + (size_t)(i * 53) % 2000;
		blk[i] = secretmem_malloc(len);
		TL_CHECK(blk[i], "malloc(%zu): %s", len, strerror(errno));
		memset(blk[i], 0x44, len);
	}
	for (int i = 0; i < n; i++)
		secretmem_free(blk[i]);
}

static void *thread_churn(void *arg)
{
	(void)arg;
	churn(1000);
	return NULL;
}

static int fresh_child(void *arg)
{
	(void)arg;
	long r = secretmem_trim();
	TL_CHECK(r == 0, "trim in a process that never allocated: %ld", r);
	return 0;
}

int main(void)
{
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	int st = tl_run_child(fresh_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trim before first use: %s", tl_status_str(st));

	churn(3000);
	struct secretmem_stats a = get();
	TL_CHECK(a.live_allocations == 0, "live blocks after freeing all");
	TL_CHECK(a.pages_mapped > 0 && a.regions > 0, "freed memory was not kept for reuse (no trim yet): %zu pages",
		 a.pages_mapped);
	long r = secretmem_trim();
	struct secretmem_stats b = get();
	printf("trim: %ld bytes; pages_mapped %zu -> %zu, regions %zu -> %zu, released %zu -> %zu\n", r, a.pages_mapped,
	       b.pages_mapped, a.regions, b.regions, a.pages_released, b.pages_released);
	TL_CHECK(r > 0, "trim after freeing everything returned %ld", r);
	TL_CHECK(b.pages_mapped < a.pages_mapped && b.regions < a.regions, "trim released nothing");
	TL_CHECK(b.pages_released > a.pages_released, "pages_released did not grow");
	TL_CHECK(secretmem_trim() >= 0, "second trim");

	/* allocation works after trim */
	unsigned char *p = secretmem_malloc(64), *q = secretmem_malloc(100000);
	TL_CHECK(p && q, "malloc after trim: %s", strerror(errno));
	for (int i = 0; i < 64; i++)
		TL_CHECK(p[i] == 0, "block after trim not zero");
	tl_fill(p, 64, 1);
	tl_fill(q, 100000, 2);

	/* trim with live blocks: they survive, still owned, still usable */
	churn(2000);
	r = secretmem_trim();
	TL_CHECK(r >= 0, "trim with live blocks: %ld", r);
	TL_CHECK(tl_check(p, 64, 1) && tl_check(q, 100000, 2), "trim changed live blocks");
	TL_CHECK(secretmem_owns(p) && secretmem_owns(q), "trim dropped live blocks");
	struct secretmem_stats c = get();
	TL_CHECK(c.live_allocations == 2, "live %zu after trim, expected 2", c.live_allocations);
	unsigned char *p2 = secretmem_realloc(p, 5000);
	TL_CHECK(p2 && tl_check(p2, 64, 1), "realloc after trim");

	/* another thread's freed memory is given back too */
	pthread_t t;
	pthread_create(&t, NULL, thread_churn, NULL);
	pthread_join(t, NULL);
	struct secretmem_stats d = get();
	r = secretmem_trim();
	struct secretmem_stats e = get();
	printf("trim after a thread exited: %ld bytes; pages_mapped %zu -> %zu\n", r, d.pages_mapped, e.pages_mapped);
	TL_CHECK(r >= 0, "trim: %ld", r);
	TL_CHECK(tl_check(p2, 64, 1) && tl_check(q, 100000, 2), "trim changed live blocks");
	secretmem_free(p2);
	secretmem_free(q);
	r = secretmem_trim();
	struct secretmem_stats f = get();
	TL_CHECK(r > 0 && f.live_allocations == 0, "final trim %ld", r);
	printf("final trim: %ld bytes, %zu pages and %zu regions left\n", r, f.pages_mapped, f.regions);
	printf("ok: trim\n");
	return TL_PASS;
}
