/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * forkquiesce.c - see forkquiesce.h.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "forkquiesce.h"
#include "tlib.h"

#define SLOTS 64

static _Atomic(unsigned char *) shared[SLOTS];
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop, held;
static atomic_long ops;
static pthread_t th[2];
static void *(*fq_alloc)(size_t);
static void (*fq_release)(void *);

static void *worker(void *arg)
{
	unsigned s = (unsigned)(intptr_t)arg * 2654435761u + 1;

	while (!atomic_load(&stop)) {
		s = s * 1103515245u + 12345u;
		int i = (int)((s >> 8) % SLOTS);
		int locked = atomic_load(&held);
		if (locked)
			pthread_mutex_lock(&writers);
		unsigned char *n = fq_alloc(48);
		if (n) {
			n[0] = (unsigned char)(i + 1);
			fq_release(atomic_exchange(&shared[i], n));
		}
		if (locked)
			pthread_mutex_unlock(&writers);
		atomic_fetch_add(&ops, 1);
	}
	return NULL;
}

/* held changes only between forks, in the forking thread */
static void prepare(void)
{
	if (atomic_load(&held))
		pthread_mutex_lock(&writers);
}

static void after(void)
{
	if (atomic_load(&held))
		pthread_mutex_unlock(&writers);
}

void fq_start(void *(*alloc)(size_t), void (*release)(void *))
{
	fq_alloc = alloc;
	fq_release = release;
	TL_CHECK(pthread_atfork(prepare, after, after) == 0, "pthread_atfork");
	/* held from their first step: a thread that read "not held" just
	 * before a switch could still write during the first held fork */
	atomic_store(&held, 1);
	for (long i = 0; i < 2; i++)
		TL_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");
}

int fq_torn_children(int hold, int forks)
{
	int torn = 0;

	atomic_store(&held, hold);
	for (int f = 0; f < forks; f++) {
		long before = atomic_load(&ops);
		while (atomic_load(&ops) < before + 20)
			sched_yield();
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			int bad = 0;
			for (int i = 0; i < SLOTS; i++) {
				unsigned char *q = atomic_load(&shared[i]);
				bad += q && q[0] != (unsigned char)(i + 1);
			}
			_exit(bad ? 1 : 0);
		}
		int st;
		TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		TL_CHECK(WIFEXITED(st), "child %d: %s", f, tl_status_str(st));
		torn += WEXITSTATUS(st) != 0;
	}
	return torn;
}

void fq_stop(void)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
}
