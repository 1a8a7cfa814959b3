/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_run_fork_stats - runs (blocks over 16 KiB) and two promises of the
 * free path:
 * (a) a fork child's secretmem_stats() counts exactly the runs that are live
 *     in it, even when the fork caught another thread in the middle of
 *     freeing or allocating a run (the child recounts them), under the copy
 *     policy (the default) and under SECRETMEM_FORK=share (a re-run of this
 *     program);
 * (b) sm_free_if_ours (the free of the heap module and of the preload
 *     module's mode all) treats a stale pointer into pages a trim gave back
 *     to a chunk as ours: fatal, never "foreign" (which would hand it to
 *     libc's free()); a libc pointer stays foreign.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "slab.h"
#include "tlib.h"

#define RUN 20000
#define FORKS 200

/* shared with the churning thread: atomics, not volatile (a data race for
 * ThreadSanitizer, and for C11) */
static _Atomic(void *) run_at; /* where the churning thread's run lives */
static atomic_int stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p = secretmem_malloc(RUN);
		if (!p)
			abort();
		atomic_store(&run_at, p); /* one kept run: the same address every time */
		memset(p, 7, 64);
		secretmem_free(p);
	}
	return NULL;
}

static size_t live_now(void)
{
	struct secretmem_stats st;

	TL_CHECK(secretmem_stats(&st) == 0, "secretmem_stats");
	return st.live_allocations;
}

static void fork_counts(void)
{
	pthread_t t;
	void *mine = secretmem_malloc(RUN + 4096); /* one live run of ours */
	int bad = 0, with_live = 0;

	TL_CHECK(mine != NULL, "malloc");
	size_t base = live_now(); /* mine and whatever the library holds */
	TL_CHECK(pthread_create(&t, NULL, churn, NULL) == 0, "pthread_create");
	while (!atomic_load(&run_at))
		;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork");
		if (pid == 0) {
			struct blockref ref;
			void *at = atomic_load(&run_at);
			/* the churning thread is gone: its run is live here or not */
			size_t want = base + (sm_lookup(at, &ref) == LOOKUP_OK ? 1 : 0);
			size_t got = live_now();
			if (got != want) {
				printf("child %d: live_allocations %zu, live blocks %zu\n", i, got, want);
				_exit(1);
			}
			_exit(sm_lookup(at, &ref) == LOOKUP_OK ? 3 : 0);
		}
		int status;
		TL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		TL_CHECK(WIFEXITED(status), "child %d died", i);
		if (WEXITSTATUS(status) == 1)
			bad++;
		if (WEXITSTATUS(status) == 3)
			with_live++;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("(a) %d forks during run churn: %d children counted wrong, %d caught the run live\n", FORKS, bad,
	       with_live);
	TL_CHECK(bad == 0, "%d of %d fork children counted runs that are not live", bad, FORKS);
	secretmem_free(mine);
}

static int stale_free(void *arg)
{
	void *keep = secretmem_malloc(32), *p = secretmem_malloc(16712);

	(void)arg;
	if (!keep || !p)
		return 2;
	secretmem_free(p);
	secretmem_trim(); /* the run's pages go back to the chunk; keep stays */
	if (!sm_in_our_memory(p)) {
		printf("the chunk went away: nothing to check\n");
		return 4;
	}
	sm_free_if_ours(p);
	printf("sm_free_if_ours of a stale pointer returned\n");
	return 3;
}

int main(int argc, char **argv)
{
	tl_need_secretmem();
	if (argc > 1 && strcmp(argv[1], "share") == 0) {
		fork_counts(); /* SECRETMEM_FORK=share, set by the parent run */
		return 0;
	}
	fork_counts();
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		char *args[] = { argv[0], (char *)"share", NULL };
		setenv("SECRETMEM_FORK", "share", 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int status;
	TL_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "(a) under SECRETMEM_FORK=share: the re-run failed");
	tl_expect_fatal("(b) sm_free_if_ours after trim", stale_free, NULL,
			"secretmem: fatal: invalid pointer (not allocated by secretmem)");
	void *q = malloc(100);
	TL_CHECK(!sm_in_our_memory(q) && sm_free_if_ours(q) == 0, "(b) a libc block is not ours");
	free(q);
	printf("fork children count live runs exactly; a stale pointer into our pages is ours\n");
	return 0;
}
