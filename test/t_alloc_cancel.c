/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_cancel - thread cancellation never acts while the library holds a
 * lock.  A thread allocates fresh 16 KiB blocks without end (each few calls
 * create a slab and fault new secret pages in, under the arena and page
 * locks) and calls pthread_testcancel() only every 64 blocks; it is
 * cancelled (deferred) while it allocates.  It must end at its own
 * pthread_testcancel(), so that it is joinable, and afterwards threads on
 * every arena must still allocate and free.  5 trials, each within a
 * deadline (a deadlock is a failure, not a hang).  Then a thread with a
 * cancellation pending forks (copy policy): the fork handlers must not act
 * on it either (they hold every lock); the thread ends at its next
 * pthread_testcancel(), the child gets its copy, and the program still
 * allocates and forks.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define TRIALS 5
#define BLOCK 16384
/* more than the 8 arenas: the workers start on the shared arena 0, where
 * the cancelled thread allocated (alone, it never waited for a lock), and
 * those that wait for one move to the others in turn (tcache.c) */
#define WORKERS 9

static atomic_long progress;

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
/* Cancellation unwinds the stack without running the frames' epilogues, so
 * AddressSanitizer would find their red zones still poisoned when it tears
 * the thread down (a false report); unpoison the stack on the way out. */
static void unpoison_stack(void *arg)
{
	(void)arg;
	__asan_handle_no_return();
}
#else
static void unpoison_stack(void *arg)
{
	(void)arg;
}
#endif

static void *victim(void *arg)
{
	void *volatile ret = (void *)2;

	(void)arg;
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	pthread_cleanup_push(unpoison_stack, NULL);
	for (long i = 0; i < 100000; i++) {
		if (!secretmem_malloc(BLOCK)) {
			ret = (void *)1; /* leaked on purpose: fresh pages each time */
			break;
		}
		atomic_fetch_add(&progress, 1);
		if (i % 64 == 63)
			pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return ret;
}

static void *worker(void *arg)
{
	void *p[16];

	(void)arg;
	for (int i = 0; i < 16; i++) {
		p[i] = secretmem_malloc(i % 2 ? BLOCK : 100);
		if (!p[i])
			return (void *)1;
		memset(p[i], 0x3c, i % 2 ? BLOCK : 100);
	}
	for (int i = 0; i < 16; i++)
		secretmem_free(p[i]);
	return NULL;
}

/* Forks with its own cancellation pending; exit 0 of the child means it
 * had its copy of the secret. */
static void *forker(void *arg)
{
	unsigned char *s = secretmem_malloc(64);
	void *volatile ret = (void *)1;
	int st;

	(void)arg;
	if (!s)
		return ret;
	pthread_cleanup_push(unpoison_stack, NULL);
	tl_fill(s, 64, 9);
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	pthread_cancel(pthread_self());
	pid_t pid = fork();
	if (pid == 0)
		tl_child_exit(tl_check(s, 64, 9) ? 0 : 2);
	if (pid > 0) {
		/* waitpid is a cancellation point: switch it off for the wait */
		int old;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		pthread_setcancelstate(old, NULL);
		secretmem_free(s);
		ret = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? (void *)2 : (void *)3;
		if (ret == (void *)2)
			pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return ret;
}

static int join_within(pthread_t t, int secs, void **ret)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	return pthread_timedjoin_np(t, ret, &ts);
}

int main(void)
{
	int secs = tl_under_valgrind() ? 120 : 10;

	tl_need_root("its forks copy more secret memory than a normal user's memory-lock limit (8 MiB)");
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	for (int trial = 0; trial < TRIALS; trial++) {
		pthread_t t;
		void *ret;
		long start = atomic_load(&progress);

		TL_CHECK(pthread_create(&t, NULL, victim, NULL) == 0, "pthread_create");
		while (atomic_load(&progress) < start + 8)
			sched_yield();
		TL_CHECK(pthread_cancel(t) == 0, "pthread_cancel");
		int rc = join_within(t, secs, &ret);
		TL_CHECK(rc == 0, "trial %d: the cancelled thread is not joinable after %d s (%s): it was cancelled "
			 "inside the library with a lock held", trial, secs, strerror(rc));
		TL_CHECK(ret == PTHREAD_CANCELED, "trial %d: the thread was not cancelled (returned %p)", trial, ret);

		pthread_t w[WORKERS];
		for (int i = 0; i < WORKERS; i++)
			TL_CHECK(pthread_create(&w[i], NULL, worker, NULL) == 0, "pthread_create");
		for (int i = 0; i < WORKERS; i++) {
			rc = join_within(w[i], secs, &ret);
			TL_CHECK(rc == 0, "trial %d: worker %d hangs after the cancellation (%s)", trial, i, strerror(rc));
			TL_CHECK(ret == NULL, "trial %d: worker %d: malloc failed", trial, i);
		}
		printf("ok: trial %d: cancelled after %ld blocks, joined; %d threads allocate\n", trial,
		       atomic_load(&progress) - start, WORKERS);
	}
	/* fork with a cancellation pending: acted on only after fork() */
	for (int trial = 0; trial < TRIALS; trial++) {
		pthread_t t;
		void *ret;
		TL_CHECK(pthread_create(&t, NULL, forker, NULL) == 0, "pthread_create");
		int rc = join_within(t, secs, &ret);
		TL_CHECK(rc == 0, "fork trial %d: the thread that forked with a cancellation pending is not joinable "
			 "after %d s (%s)", trial, secs, strerror(rc));
		TL_CHECK(ret == PTHREAD_CANCELED, "fork trial %d: %s", trial,
			 ret == (void *)1 ? "fork failed" : ret == (void *)3 ? "the child did not get its copy" :
			 "the thread was not cancelled at its own pthread_testcancel()");
		pthread_t w[WORKERS];
		for (int i = 0; i < WORKERS; i++)
			TL_CHECK(pthread_create(&w[i], NULL, worker, NULL) == 0, "pthread_create");
		for (int i = 0; i < WORKERS; i++) {
			rc = join_within(w[i], secs, &ret);
			TL_CHECK(rc == 0, "fork trial %d: worker %d hangs (%s)", trial, i, strerror(rc));
			TL_CHECK(ret == NULL, "fork trial %d: worker %d: malloc failed", trial, i);
		}
	}
	printf("ok: %d forks with a cancellation pending\n", TRIALS);

	/* and a fork (copy) afterwards: no lock was left held */
	unsigned char *s = secretmem_malloc(32);
	TL_CHECK(s, "malloc");
	tl_fill(s, 32, 4);
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		alarm(secs);
		tl_child_exit(tl_check(s, 32, 4) ? 0 : 2);
	}
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork after the trials: child %s",
		 tl_status_str(st));
	secretmem_free(s);
	return TL_PASS;
}
