/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_glibc_threads - under the heap module, glibc's own malloc serves
 * only blocks above the huge threshold, so its first call can come from any
 * thread.  glibc sets itself up at that call without a lock and hands the
 * calling thread the main arena on a count that starts at one; two threads
 * doing that at once both hold the main arena on that one count, and glibc
 * aborts when the second exits ("a->attached_threads > 0").  The module sets
 * glibc up in its own start-up, so no thread of the program ever does:
 *  - "arena": a thread's first glibc block (SECRETMEM_HEAP_HUGE=64k, a
 *    100 KiB block, below glibc's mmap threshold) comes from an arena of the
 *    thread's own, not the main arena a set-up would hand it (the chunk's
 *    NON_MAIN_ARENA bit); the main thread made no glibc call before;
 *  - and 8 threads released by a barrier each take a glibc block at once,
 *    in a loop, and end: the process exits cleanly (the abort itself was
 *    seen in about 2 runs in 100 of the two-thread form).
 * As root, and as an ordinary user under ulimit -l 8192.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

#define BLOCK ((size_t)100 << 10)
#define NTHREADS 8
#define NON_MAIN_ARENA ((size_t)4) /* glibc's chunk size bit */

static pthread_barrier_t start;

static void *first_block(void *arg)
{
	size_t *word = arg;
	unsigned char *p = malloc(BLOCK);

	if (!p)
		return (void *)1;
	p[0] = 1;
	unsigned char *h = p;
	__asm__("" : "+r"(h)); /* glibc's chunk header is just below the block */
	memcpy(word, h - sizeof(size_t), sizeof(size_t));
	if (hr_where(p) != 'o') /* glibc's, or the case tests nothing */
		*word = 0;
	free(p);
	return NULL;
}

static void *together(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int k = 0; k < 16; k++) {
		void *p = malloc(BLOCK);
		if (!p)
			return (void *)1;
		memset(p, k, 64);
		free(p);
	}
	return NULL;
}

static int child(void)
{
	pthread_t t[NTHREADS];
	size_t word = 0;
	void *r;

	TL_CHECK(hr_active(), "the heap module is not active");
	TL_CHECK(pthread_create(&t[0], NULL, first_block, &word) == 0, "pthread_create");
	pthread_join(t[0], &r);
	TL_CHECK(r == NULL, "malloc of %zu bytes failed", BLOCK);
	TL_CHECK(word != 0, "the block is not glibc's (SECRETMEM_HEAP_HUGE not applied)");
	printf("the thread's first glibc chunk: size word %#zx\n", word);
	TL_CHECK(word & NON_MAIN_ARENA, "a thread's first glibc block came from the main arena: glibc "
		 "was set up by that thread, not by the module");
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		TL_CHECK(pthread_create(&t[i], NULL, together, NULL) == 0, "pthread_create");
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], &r);
		TL_CHECK(r == NULL, "malloc failed in a thread");
	}
	printf("child ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const env[] = { "SECRETMEM_HEAP_HUGE=64k", NULL };
	char out[8192];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	hr_module();
	/* one arena for all would make the main arena every thread's */
	unsetenv("MALLOC_ARENA_MAX");
	unsetenv("GLIBC_TUNABLES");
	for (int user = 0; user < 2; user++) {
		int st = hr_run_user(argv[0], "run", 1, env, user ? (size_t)8192 << 10 : 0, out, sizeof(out));
		if (user && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			printf("%s", out);
			tl_skip("an ordinary user cannot run the tests here");
		}
		printf("== %s: %s\n%s", user ? "as an ordinary user (ulimit -l 8192)" : "as root", tl_status_str(st),
		       out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s",
			 tl_status_str(st));
	}
	printf("pass\n");
	return 0;
}
