/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_abort_double - a double free is fatal at once: SIGABRT and the
 * exact line "secretmem: fatal: double free".  The first cases run in a
 * process that never had a second thread (free's plain check), the last one
 * after a thread was created (free's atomic step).
 */
#include <pthread.h>
#include <string.h>
#include "secretmem.h"
#include "tlib.h"

#define MSG "secretmem: fatal: double free"

static int small(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	void *p = secretmem_malloc(n);

	secretmem_free(p);
	secretmem_free(p);
	printf("second free of a %zu-byte block returned\n", n);
	return 3;
}

/* Other frees of the class between the two frees of p. */
static int interleaved(void *arg)
{
	void *p = secretmem_malloc(32), *q[10];

	(void)arg;
	for (int i = 0; i < 10; i++)
		q[i] = secretmem_malloc(32);
	secretmem_free(p);
	for (int i = 0; i < 10; i++)
		secretmem_free(q[i]);
	secretmem_free(p);
	printf("double free after other frees returned\n");
	return 3;
}

/* A calloc block freed twice. */
static int calloc_block(void *arg)
{
	void *p = secretmem_calloc(3, 40);

	(void)arg;
	secretmem_free(p);
	secretmem_free(p);
	return 3;
}

static void *thread_free(void *p)
{
	secretmem_free(p);
	return NULL;
}

/* First free in another thread, second in this one (after which the
 * process has had a second thread: free's atomic step). */
static int cross_thread(void *arg)
{
	pthread_t t;
	void *p = secretmem_malloc((size_t)(uintptr_t)arg);

	pthread_create(&t, NULL, thread_free, p);
	pthread_join(t, NULL);
	secretmem_free(p);
	printf("double free across threads returned\n");
	return 3;
}

int main(void)
{
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	tl_expect_fatal("double free, 32 bytes", small, (void *)(uintptr_t)32, MSG);
	tl_expect_fatal("double free, 20 bytes", small, (void *)(uintptr_t)20, MSG);
	tl_expect_fatal("double free, 16384 bytes", small, (void *)(uintptr_t)16384, MSG);
	tl_expect_fatal("double free, large (40000 bytes)", small, (void *)(uintptr_t)40000, MSG);
	tl_expect_fatal("double free, a run of the TLS record size (16712 bytes)", small, (void *)(uintptr_t)16712,
			MSG);
	tl_expect_fatal("double free, malloc(0)", small, (void *)(uintptr_t)0, MSG);
	tl_expect_fatal("double free after other frees", interleaved, NULL, MSG);
	tl_expect_fatal("double free of a calloc block", calloc_block, NULL, MSG);
	tl_expect_fatal("double free, first free in another thread", cross_thread, (void *)(uintptr_t)64, MSG);
	tl_expect_fatal("double free of a run (20000 bytes), first free in another thread", cross_thread,
			(void *)(uintptr_t)20000, MSG);
	return TL_PASS;
}
