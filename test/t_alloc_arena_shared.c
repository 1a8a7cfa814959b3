/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_arena_shared - threads that never wait for one another share one
 * arena of slabs: 8 threads run one after the other, each allocating a
 * block of each of 30 sizes (32 bytes to 12 KiB), writing, checking and
 * freeing them; the pages made ready for all 8 stay under 1.5 times those
 * of the first thread alone (with an arena per thread, each thread's slabs
 * were new: about 8 times).  Then a thread whose first refill finds the
 * shared arena's lock held (the test holds it) takes its next blocks from
 * an arena of its own.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "secretmem.h"
#include "slabint.h"
#include "tlib.h"

#define SIZES 30
#define THREADS 8

static size_t size_of(int i)
{
	return (size_t)32 << (i / 3) > 12288 ? 12288 - (size_t)i : ((size_t)32 << (i / 3)) + (size_t)i * 8;
}

static void *one(void *arg)
{
	unsigned char *k[SIZES];

	(void)arg;
	for (int i = 0; i < SIZES; i++) {
		k[i] = secretmem_malloc(size_of(i));
		if (!k[i])
			return (void *)1;
		memset(k[i], i + 1, size_of(i));
	}
	for (int i = 0; i < SIZES; i++) {
		if (k[i][0] != i + 1 || k[i][size_of(i) - 1] != i + 1)
			return (void *)2;
		secretmem_free(k[i]);
	}
	return NULL;
}

static size_t ready(void)
{
	struct secretmem_stats st;

	TL_CHECK(secretmem_stats(&st) == 0, "stats");
	return st.pages_faulted;
}

static void *waits(void *arg)
{
	void **kept = arg;

	/* its first refill finds arena 0's lock held (by main) and waits */
	void *first = secretmem_malloc(48);
	if (!first)
		return (void *)1;
	secretmem_free(first);
	for (int i = 0; i < 3; i++)
		if (!(kept[i] = secretmem_malloc(200)))
			return (void *)1;
	return NULL;
}

int main(void)
{
	pthread_t t;
	void *rv;

	tl_need_secretmem();
	secretmem_free(secretmem_malloc(1)); /* start-up */
	size_t base = ready();
	TL_CHECK(pthread_create(&t, NULL, one, NULL) == 0 && pthread_join(t, &rv) == 0 && !rv, "thread 0");
	size_t first = ready() - base;
	for (int k = 1; k < THREADS; k++)
		TL_CHECK(pthread_create(&t, NULL, one, NULL) == 0 && pthread_join(t, &rv) == 0 && !rv, "thread %d", k);
	size_t all = ready() - base;
	printf("pages made ready: first thread %zu, all %d one after the other %zu\n", first, THREADS, all);
	TL_CHECK(all * 2 <= first * 3, "%d threads that never met made %zu pages ready, the first alone %zu", THREADS,
		 all, first);
	/* a thread that waits for the shared arena's lock moves */
	void *kept[3];
	unsigned cls = sm_size_class(200);
	pthread_mutex_lock(&sm_arenas[0].lock);
	TL_CHECK(pthread_create(&t, NULL, waits, kept) == 0, "create");
	usleep(100000);
	pthread_mutex_unlock(&sm_arenas[0].lock);
	TL_CHECK(pthread_join(t, &rv) == 0 && !rv, "the waiting thread: %p", rv);
	int others = 0;
	for (unsigned a = 1; a < SM_NARENAS; a++)
		others += sm_arenas[a].partial[cls] != NULL;
	printf("a thread that waited for arena 0: its next blocks in %d other arena%s, in arena 0 %d\n", others,
	       others == 1 ? "" : "s", sm_arenas[0].partial[cls] != NULL);
	TL_CHECK(others == 1 && !sm_arenas[0].partial[cls], "the thread that waited did not move");
	for (int i = 0; i < 3; i++)
		secretmem_free(kept[i]);
	printf("ok: threads share an arena until they wait for one another\n");
	return TL_PASS;
}
