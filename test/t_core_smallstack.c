/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_smallstack - the library works on a thread with the smallest stack
 * POSIX allows (PTHREAD_STACK_MIN, 16 KiB on x86-64).
 *
 * The library's first use (the probe, a region, an allocator chunk) runs in
 * such a thread of a fresh process: every memfd_secret call is made in a
 * short-lived child, whose stack must not come out of the caller's (it used
 * to take 16 KiB of it, and the thread died of SIGSEGV).  Skipped under the
 * sanitizers, whose instrumentation needs more stack than this by itself.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

__attribute__((noinline)) static void *library_calls(void)
{
	char *p = secretmem_malloc(64); /* first: probe and chunk, deepest path */
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	char *q = secretmem_malloc(100000);
	if (!r || !p || !q)
		return (void *)1;
	memset(p, 1, 64);
	memset(q, 2, 100000);
	secretmem_free(q);
	secretmem_free(p);
	return secretmem_region_destroy(r) ? (void *)2 : NULL;
}

/* A program's thread calls the library from some depth of its own: 6 KiB of
 * its 16 KiB are in use (the rest of the 16 KiB holds the thread's TLS and
 * descriptor).  The library's own frames must fit in what is left. */
static void *work(void *arg)
{
	volatile unsigned char used[6144];

	(void)arg;
	used[0] = 1;
	used[sizeof(used) - 1] = 1;
	void *ret = library_calls();
	return used[0] == 1 ? ret : (void *)5;
}

static int small_thread(void *arg)
{
	(void)arg;
	pthread_attr_t a;
	pthread_t t;
	void *ret = (void *)3;

	pthread_attr_init(&a);
	if (pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN) != 0 || pthread_create(&t, &a, work, NULL) != 0)
		return 4;
	pthread_join(t, &ret);
	return (int)(intptr_t)ret;
}

int main(void)
{
	char out[2048];

#ifdef TL_SANITIZED
	tl_skip("sanitizer build: its instrumentation alone needs more than PTHREAD_STACK_MIN");
#endif
	if (tl_under_valgrind())
		tl_skip("under valgrind (its own stack handling)");
	/* the first use of the library is in the child's small thread */
	int st = tl_run_child(small_thread, NULL, out, sizeof(out));
	printf("thread with a %d-byte stack: %s\n%s", (int)PTHREAD_STACK_MIN, tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a thread with a %d-byte stack: %s", (int)PTHREAD_STACK_MIN,
		 tl_status_str(st));
	return 0;
}
