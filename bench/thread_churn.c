/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * thread_churn N [DEPTH_KIB] - start and join N threads one after the
 * other, each writing DEPTH_KIB (default 16) of its stack, then waiting
 * once in poll() on a ready pipe and once with a 1 ms timeout on an empty
 * one; prints "thread_churn: N threads, X us wall, Y us CPU per thread".
 * Run plainly and under heap-mode modules by bench/stack_bench.py.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int depth = 16, ready[2], empty[2];

static void *body(void *arg)
{
	char *buf = __builtin_alloca((size_t)depth * 1024);
	struct pollfd p[2] = { { .fd = ready[0], .events = POLLIN }, { .fd = empty[0], .events = POLLIN } };

	memset(buf, 1, (size_t)depth * 1024);
	__asm__ volatile("" : : "r"(buf) : "memory");
	if (poll(&p[0], 1, 100) != 1 || poll(&p[1], 1, 1) != 0)
		abort();
	return arg;
}

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;

	if (argc > 2)
		depth = atoi(argv[2]);
	if (n < 1 || depth < 1 || depth > 4096 || pipe(ready) || pipe(empty) || write(ready[1], "x", 1) != 1)
		return 64;
	double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, body, NULL) || pthread_join(t, NULL))
			return 1;
	}
	double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("thread_churn: %d threads, %.2f us wall, %.2f us CPU per thread\n", n, (w1 - w0) / n * 1e6,
	       (c1 - c0) / n * 1e6);
	return 0;
}
