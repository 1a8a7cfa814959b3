/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rel_regress_fork_copy.c - regression test for a race found by
 * t_rel_stress: fork() with the copy policy from a parent whose other
 * threads keep allocating.
 *
 * The child's private copy of the secret pages is made in the child's
 * atfork handler, after fork() has returned in the parent and the parent's
 * threads run again.  Until the copy is done the child reads the shared
 * pages, so it can copy data that the parent wrote after the fork: into a
 * slot that was free at the fork (the child's metadata says free, its copy
 * is not zero: the child's next malloc of that slot aborts with "freed block
 * was modified"), or into a block of the forking thread (the child sees a
 * value its parent wrote after fork() returned, unlike any fork(2) copy).
 *
 * Here 7 threads allocate, fill and free blocks of a few classes while the
 * main thread forks 40 times; right after each fork() the parent rewrites
 * its own canary block.  Each child must see the canary as it was at the
 * fork and must be able to allocate 300 blocks of the workers' classes.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"


#define NTHREADS 7
#define CANARY_LEN 64

static atomic_int stop;
static unsigned char *canary;

static void *worker(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *held[16] = { 0 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		unsigned i = (unsigned)(s % 16);
		if (held[i]) {
			secretmem_free(held[i]);
			held[i] = NULL;
		} else {
			size_t n = 16 + (s >> 8) % 200;
			held[i] = secretmem_malloc(n);
			if (held[i])
				memset(held[i], 0xff, n);
		}
	}
	for (int i = 0; i < 16; i++)
		secretmem_free(held[i]);
	return NULL;
}

static int child(unsigned gen)
{
	alarm(20);
	for (int i = 0; i < CANARY_LEN; i++)
		if (canary[i] != (unsigned char)gen) {
			fprintf(stderr, "child %u sees the canary as %u: written by the parent after fork\n", gen,
				canary[i]);
			return 3;
		}
	static unsigned char *p[300];
	for (int i = 0; i < 300; i++) {
		p[i] = secretmem_malloc(16 + (size_t)(i * 7) % 200);
		if (!p[i])
			return 4;
	}
	for (int i = 0; i < 300; i++)
		secretmem_free(p[i]);
	return 0;
}

int main(void)
{
	pthread_t th[NTHREADS];
	int bad = 0, runs = tl_under_valgrind() ? 10 : 40;

	if (secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_COPY))
		TL_FAIL("set_option");
	canary = secretmem_malloc(CANARY_LEN);
	if (!canary)
		TL_FAIL("malloc: %s", strerror(errno));
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)))
			TL_FAIL("pthread_create");
	usleep(20000);
	for (unsigned gen = 1; gen <= (unsigned)runs; gen++) {
		memset(canary, (int)gen, CANARY_LEN);
		fflush(stderr);
		pid_t pid = fork();
		if (pid < 0)
			TL_FAIL("fork: %s", strerror(errno));
		if (pid == 0)
			tl_child_exit(child(gen));
		memset(canary, 0xaa, CANARY_LEN); /* after the fork: not the child's business */
		int st;
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				TL_FAIL("waitpid: %s", strerror(errno));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "fork %u: child ended with %s\n", gen, tl_status_str(st));
			bad++;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	secretmem_free(canary);
	printf("%d forks with the copy policy from a threaded parent, %d children failed\n", runs, bad);
	TL_CHECK(bad == 0, "the copy policy does not give the child the memory as it was at fork()");
	return 0;
}
