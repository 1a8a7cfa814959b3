/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_threads - a parent with 4 threads allocating and freeing all
 * the time forks 100 times (policies copy and drop in turn); each child
 * allocates, checks and frees once and exits.  No fork may deadlock (alarm),
 * every child must exit 0, and the parent's blocks stay intact.  Under
 * valgrind the number of forks is reduced.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define THREADS 4
#define SLOTS 64

static atomic_int stop;
static atomic_long thread_ops;
static unsigned char *keep;
static unsigned char *slots[THREADS][SLOTS];
static size_t lens[THREADS][SLOTS];

static void *worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)((intptr_t)arg + 1);
	/* global, not on the thread's stack: a forked child (which has no
	 * other threads) can still reach these blocks, so valgrind does not
	 * report them as lost there */
	unsigned char **slot = slots[(intptr_t)arg];
	size_t *len = lens[(intptr_t)arg];

	while (!atomic_load(&stop)) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t i = s % SLOTS;
		if (slot[i]) {
			if (!tl_check(slot[i], len[i], (uintptr_t)slot[i]))
				TL_FAIL("thread block %p (%zu bytes) corrupted", (void *)slot[i], len[i]);
			secretmem_free(slot[i]);
			slot[i] = NULL;
		} else {
			len[i] = 16 + (s >> 20) % 3000;
			if ((s >> 40) % 200 == 0)
				len[i] += 20000;
			slot[i] = secretmem_malloc(len[i]);
			if (!slot[i])
				TL_FAIL("thread malloc(%zu): %s", len[i], strerror(errno));
			tl_fill(slot[i], len[i], (uintptr_t)slot[i]);
		}
		atomic_fetch_add_explicit(&thread_ops, 1, memory_order_relaxed);
	}
	for (size_t i = 0; i < SLOTS; i++) {
		if (slot[i]) {
			if (!tl_check(slot[i], len[i], (uintptr_t)slot[i]))
				TL_FAIL("thread block %p corrupted", (void *)slot[i]);
			secretmem_free(slot[i]);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	int forks = 100;

	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	if (tl_under_valgrind()) {
		forks = 20;
		printf("under valgrind: %d forks instead of 100\n", forks);
	}
	tl_signal_default(SIGALRM);
	alarm(tl_under_valgrind() ? 600 : 60); /* a deadlock kills the test */

	keep = secretmem_malloc(64);
	TL_CHECK(keep, "malloc: %s", strerror(errno));
	tl_fill(keep, 64, 77);
	for (long i = 0; i < THREADS; i++)
		TL_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");

	int policies[2] = { 0, 0 };
	for (int f = 0; f < forks; f++) {
		int policy = f % 2 ? SECRETMEM_FORK_DROP : SECRETMEM_FORK_COPY;
		TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, policy) == 0, "set_option(FORK)");
		/* let the threads run between forks */
		long before = atomic_load(&thread_ops);
		while (atomic_load(&thread_ops) < before + 50)
			sched_yield();
		fflush(stdout);
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork %d: %s", f, strerror(errno));
		if (pid == 0) {
			if (policy == SECRETMEM_FORK_COPY && !tl_check(keep, 64, 77))
				_exit(2);
			unsigned char *p = secretmem_malloc(100);
			if (!p)
				_exit(3);
			for (int i = 0; i < 100; i++)
				if (p[i])
					_exit(4);
			tl_fill(p, 100, 5);
			if (!tl_check(p, 100, 5))
				_exit(5);
			secretmem_free(p);
			_exit(0);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			TL_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork %d (policy %s): child %s", f,
			 policy == SECRETMEM_FORK_COPY ? "copy" : "drop", tl_status_str(st));
		policies[policy == SECRETMEM_FORK_DROP]++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	alarm(0);
	TL_CHECK(tl_check(keep, 64, 77), "the parent's block changed");
	secretmem_free(keep);
	struct secretmem_stats s;
	TL_CHECK(secretmem_stats(&s) == 0 && s.live_allocations == 0, "live blocks left: %zu", s.live_allocations);
	printf("ok: %d forks (%d copy, %d drop) from 4 busy threads, %ld thread operations\n", forks, policies[0],
	       policies[1], (long)thread_ops);
	return TL_PASS;
}
