/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_stackkey KEYFILE - a program that leaves a key in dead stack frames,
 * as signing code does: it reads a 32-byte key into a malloc()ed buffer;
 * a worker thread waits 2 ms (under the module: a clearing), copies it
 * into a local array four calls deep, hashes it, returns and waits in
 * poll() (under the module: less than 10 ms after its last clearing); a second thread does the same and ends
 * (glibc keeps its stack for the next thread); then the main thread does
 * the same and waits in read().  The last copy also goes through vector
 * register xmm15 (each thread's), which nothing after it uses.  Prints
 * "worker LO HI" and "ended LO HI" (the threads' stacks) and "ready"
 * before the main thread's copy.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char *key;
static volatile unsigned long sink;
static int started;
static uintptr_t worker_lo, worker_hi, ended_lo, ended_hi;

__attribute__((noinline)) static unsigned long hash(const unsigned char *p, size_t n)
{
	unsigned long h = 14695981039346656037ul;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ul;
	return h;
}

/* depth frames of 256 bytes each, then the key into a local array. */
__attribute__((noinline)) static void use_key(int depth)
{
	unsigned char local[256];

	if (depth > 0) {
		memset(local, depth, sizeof(local));
		use_key(depth - 1);
	} else {
		memcpy(local, key, 32);
		memcpy(local + 32, key, 32);
		sink += hash(local, 64);
#if defined(__x86_64__)
		__asm__ volatile("movdqu (%0), %%xmm15" : : "r"(key) : "xmm15");
#endif
	}
	__asm__ volatile("" : : "r"(local) : "memory");
}

static void my_stack(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &a) == 0 && pthread_attr_getstack(&a, &addr, &size) == 0) {
		*lo = (uintptr_t)addr;
		*hi = (uintptr_t)addr + size;
	}
}

static void *ender(void *arg)
{
	(void)arg;
	my_stack(&ended_lo, &ended_hi);
	use_key(4);
	return NULL;
}

static void *worker(void *arg)
{
	int *fds = arg;
	struct pollfd p = { .fd = fds[0], .events = POLLIN };

	my_stack(&worker_lo, &worker_hi);
	poll(NULL, 0, 2);
	use_key(4);
	__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	poll(&p, 1, -1);
	return NULL;
}

int main(int argc, char **argv)
{
	static int wfds[2], mfds[2];
	pthread_t t, e;
	char c;

	if (argc != 2)
		return 64;
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	key = malloc(32);
	if (fd < 0 || !key || read(fd, key, 32) != 32 || close(fd) != 0)
		return 1;
	if (pipe(wfds) != 0 || pipe(mfds) != 0 || pthread_create(&t, NULL, worker, wfds) != 0)
		return 1;
	while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		sched_yield();
	if (pthread_create(&e, NULL, ender, NULL) != 0 || pthread_join(e, NULL) != 0)
		return 1;
	printf("worker %lx %lx\nended %lx %lx\nready\n", (unsigned long)worker_lo, (unsigned long)worker_hi,
	       (unsigned long)ended_lo, (unsigned long)ended_hi);
	fflush(stdout);
	use_key(4);
	return read(mfds[0], &c, 1) == 1 ? 0 : 2;
}
