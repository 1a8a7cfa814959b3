/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_free_record - secretmem_free finds a block's slab through a
 * per-thread record of the chunk of the thread's last free before it asks
 * the radix map (alloc.c, struct tcache).  The record must never outlive
 * its chunk:
 *  - a free records its block's chunk; a free in another chunk replaces it;
 *  - secretmem_trim releasing the chunk makes the record stale at once, and
 *    the stale pointer's free is then fatal as "not allocated by secretmem"
 *    (t_rel_bad_input holds that outcome);
 *  - in a child under the fork policy "drop", whose chunks are forgotten,
 *    the record is stale too, and the old pointer's free is fatal;
 *  - in a child under "copy" the chunks are the same and so is the record;
 *  - under SECRETMEM_RELEASE_IDLE the free of the last live block releases
 *    the chunk, and the record of that very free is stale at once;
 *  - a thread that takes over the cache memory of an exited thread finds no
 *    record of a chunk released after that thread's last free.
 * Mutations seen failing: no bump of sm_radix_gen when an owner leaves the
 * radix map (the trim case), none in the fork child's radix_clear_all and
 * no reset in sm_alloc_fork_child_empty together (the drop case), record_holds
 * without the generation (both), no record made by free (the first case);
 * no bump in radix_set alone (the RELEASE_IDLE case first); record_holds
 * without the generation together with tcache_get keeping the old record of
 * a reused cache (the thread case, with the two earlier cases disabled).
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#define FOREIGN "secretmem: fatal: invalid pointer (not allocated by secretmem)"

static unsigned char *old;

/* In a fresh child (the parent has not allocated yet): RELEASE_IDLE. */
static int idle_child(void *arg)
{
	(void)arg;
	if (secretmem_set_option(SECRETMEM_OPT_RELEASE_IDLE, 1) != 0)
		return 2;
	unsigned char *p = secretmem_malloc(32), *q = secretmem_malloc(32);
	if (!p || !q)
		return 3;
	secretmem_free(q);
	if (!sm_alloc_free_record_covers(p)) {
		printf("idle: free made no record while a block was live\n");
		return 4;
	}
	secretmem_free(p); /* the last live block: the chunk goes */
	if (secretmem_owns(p)) {
		printf("idle: the chunk stayed after the last free\n");
		return 5;
	}
	if (sm_alloc_free_record_covers(p)) {
		printf("idle: the record outlived its chunk (release of the idle heap)\n");
		return 6;
	}
	return 0;
}

static void *free_and_exit(void *arg)
{
	(void)arg;
	old = secretmem_malloc(32);
	if (old)
		secretmem_free(old);
	return sm_alloc_free_record_covers(old) ? old : NULL;
}

static void *new_thread_record(void *arg)
{
	(void)arg;
	void *p = secretmem_malloc(32); /* takes a cache, maybe the exited one's */
	int covers = sm_alloc_free_record_covers(old);
	secretmem_free(p);
	return covers ? old : NULL;
}

static int drop_child(void *arg)
{
	(void)arg;
	if (sm_alloc_free_record_covers(old)) {
		printf("drop: the child's record still covers the parent's chunk\n");
		return 3;
	}
	secretmem_free(old); /* fatal: the chunk is not this process's */
	printf("drop: free of the parent's pointer returned\n");
	return 4;
}

static int copy_child(void *arg)
{
	(void)arg;
	if (!sm_alloc_free_record_covers(old)) {
		printf("copy: the child's record no longer covers the copied chunk\n");
		return 3;
	}
	unsigned char *q = secretmem_malloc(32);
	if (!q || !secretmem_owns(q))
		return 4;
	secretmem_free(q);
	return sm_alloc_free_record_covers(q) ? 0 : 5;
}

int main(void)
{
	static char out[4096];
	/* first, before this process allocates: a child under RELEASE_IDLE */
	int st = tl_run_child(idle_child, NULL, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "RELEASE_IDLE child: %s\n%s", tl_status_str(st), out);

	/* a free records its block's chunk */
	unsigned char *p = secretmem_malloc(32), *keep = secretmem_malloc(32);
	TL_CHECK(p && keep, "malloc");
	TL_CHECK(!sm_alloc_free_record_covers(p), "a record before any free");
	secretmem_free(p);
	TL_CHECK(sm_alloc_free_record_covers(p), "free made no record of its chunk");
	TL_CHECK(sm_alloc_free_record_covers(keep), "the record does not cover the chunk's other block");

	/* a free in another chunk replaces it: fill this chunk, and more */
	static unsigned char *v[20000];
	int n = 0, other = -1;
	for (; n < 20000 && other < 0; n++) {
		v[n] = secretmem_malloc(32);
		TL_CHECK(v[n], "malloc %d", n);
		if (n > 0 && (uintptr_t)v[n] >> 21 != (uintptr_t)keep >> 21)
			other = n;
	}
	TL_CHECK(other >= 0, "20000 blocks of 32 bytes fit one chunk");
	secretmem_free(v[other]);
	TL_CHECK(sm_alloc_free_record_covers(v[other]), "the free in the second chunk made no record");
	TL_CHECK(!sm_alloc_free_record_covers(keep), "the record of the first chunk stayed after a free in the second");
	secretmem_free(keep);
	TL_CHECK(sm_alloc_free_record_covers(keep), "the free in the first chunk made no record");
	for (int i = 0; i < n; i++)
		if (i != other)
			secretmem_free(v[i]);

	/* a trim that releases the chunks makes the record stale */
	old = secretmem_malloc(32);
	TL_CHECK(old, "malloc");
	secretmem_free(old);
	TL_CHECK(sm_alloc_free_record_covers(old), "free made no record");
	TL_CHECK(secretmem_trim() > 0, "trim released nothing");
	TL_CHECK(!secretmem_owns(old), "the chunk is still there after the trim");
	TL_CHECK(!sm_alloc_free_record_covers(old), "the record outlived its chunk (trim)");

	/* a thread's cache memory outlives it: a record in it must not */
	pthread_t th;
	void *res;
	TL_CHECK(pthread_create(&th, NULL, free_and_exit, NULL) == 0 && pthread_join(th, &res) == 0, "thread");
	TL_CHECK(res != NULL, "the thread's free made no record");
	TL_CHECK(secretmem_trim() > 0, "trim released nothing after the thread exited");
	TL_CHECK(!secretmem_owns(old), "the chunk is still there after the trim");
	TL_CHECK(pthread_create(&th, NULL, new_thread_record, NULL) == 0 && pthread_join(th, &res) == 0, "thread");
	TL_CHECK(res == NULL, "a new thread's record covers a chunk released after the old thread's exit");

	/* fork: drop forgets the chunks, copy keeps them */
	old = secretmem_malloc(32);
	unsigned char *live = secretmem_malloc(32);
	TL_CHECK(old && live, "malloc");
	memset(live, 7, 32);
	secretmem_free(old);
	TL_CHECK(sm_alloc_free_record_covers(old), "free made no record");
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_DROP) == 0, "fork policy drop");
	tl_expect_fatal("drop: free of the parent's pointer in the child", drop_child, NULL, FOREIGN);
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_COPY) == 0, "fork policy copy");
	st = tl_run_child(copy_child, NULL, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "copy child: %s\n%s", tl_status_str(st), out);
	TL_CHECK(sm_alloc_free_record_covers(old), "the parent's record changed by a fork");
	secretmem_free(live);
	return TL_PASS;
}
