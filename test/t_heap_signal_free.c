/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_signal_free - a signal handler that calls free() while its thread
 * is inside the heap module's allocator (secretmem-heap(7), SIGNAL
 * HANDLERS): the free waits on the thread's list and is done at the
 * thread's next call, so the program neither deadlocks nor tears its
 * thread cache.
 *
 * The child, under the module: a pool of 100000 blocks, then rounds of 256
 * malloc and 256 free of small blocks while an interval timer (20 us)
 * delivers SIGALRM, whose handler frees the next block of the pool - until
 * the pool is empty.  It must finish (a watchdog thread ends it with exit 3
 * after 60 s: the deadlock), some frees must have been deferred (the
 * figures page counts them), and once they were done the module's live
 * blocks are back to what they were before the pool (mallinfo2's ordblks).
 * Before the module deferred them, the child ended with "secretmem: fatal:
 * double free" (abort), a SIGSEGV, or hung (5 of 6 runs by hand: 134, 134,
 * 139, 134, timeout, 134).  glibc's malloc fails the same child ("corrupted
 * double-linked list"): free() is not async-signal-safe, and programs must
 * not call it from a handler; the module only makes it no worse than an
 * error.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define POOL 100000
#define ROUNDS 200000

static void *pool[POOL];
static volatile int next;

static void on_alarm(int sig)
{
	(void)sig;
	if (next < POOL)
		free(pool[next++]);
}

static void *watchdog(void *arg)
{
	static const char msg[] = "watchdog: the child did not finish in 60 s (deadlock)\n";

	sigset_t all;

	(void)arg;
	sigfillset(&all); /* SIGALRM is for the main thread */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (unsigned left = 60; left;)
		left = sleep(left);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static int child(void)
{
	struct sigaction sa;
	struct sm_heap_stats st;
	pthread_t w;
	void *v[256];

	if (!hr_active()) {
		printf("the module is not active\n");
		return 2;
	}
	if (pthread_create(&w, NULL, watchdog, NULL) != 0)
		return 2;
	size_t live0 = mallinfo2().ordblks;
	for (int i = 0; i < POOL; i++)
		pool[i] = malloc(48 + (size_t)(i % 7) * 16);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 20 }, { 0, 20 } };
	setitimer(ITIMER_REAL, &it, NULL);
	int r;
	for (r = 0; r < ROUNDS && next < POOL; r++) {
		for (int i = 0; i < 256; i++)
			v[i] = malloc(32 + (size_t)(i % 13) * 16);
		for (int i = 0; i < 256; i++)
			free(v[i]);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	while (next < POOL) /* what the timer did not reach */
		free(pool[next++]);
	free(malloc(16)); /* the next call: drains what is left */
	size_t live1 = mallinfo2().ordblks;
	if (hr_stats(0, &st) != 0) {
		printf("no figures page\n");
		return 2;
	}
	printf("rounds %d, deferred frees %llu, live blocks %zu before the pool, %zu at the end\n", r,
	       (unsigned long long)st.deferred_frees, live0, live1);
	if (st.deferred_frees == 0) {
		printf("no free was deferred: the handler never interrupted the allocator\n");
		return 1;
	}
	return live1 == live0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	static char out[8192];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	hr_module();
	int st = hr_run(argv[0], "child", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));
	printf("pass\n");
	return 0;
}
