/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * pair_steps - instructions per operation of the small-block workloads of
 * make bench (the 32-byte pair first, hence the name; the batch and random
 * 16-512 B too), counted by single-stepping a child with ptrace: no
 * hardware counters are needed, and the library runs natively on its
 * secret backend (under valgrind it would run on the fallback backend with
 * valgrind's requests).  The VM's noise does not move these counts.
 *
 *   build/bench/pair_steps [ALLOCATOR [WORKLOAD]]
 *     ALLOCATOR  secretmem (default): secretmem_malloc / secretmem_free;
 *                glibc: malloc / explicit_bzero + free;
 *                mimalloc: mi_malloc / explicit_bzero + mi_free, from
 *                Debian's libmimalloc.so.2 (through pointers: one indirect
 *                call each)
 *     WORKLOAD   pair (default): alloc(32) + write + free, per pair;
 *                batch: 1,000 x (alloc(32) + write), then 1,000 frees, per
 *                block;
 *                random: in a live set of 1,000 blocks of 16-512 bytes,
 *                free one and allocate one of a random size (written
 *                whole), per operation.
 *
 * The child warms up, stops at an int3, runs the measured part and stops
 * at a second int3; the parent counts the steps in between.  The count
 * includes the loop, the random numbers (an xorshift) and the writes.
 * x86-64 only.
 */
#include <dlfcn.h>
#include <secretmem.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAIRS 10
#define BATCH 1000
#define LIVE 1000
#define RANDOM_OPS 1000
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

enum { SECRETMEM, GLIBC, MIMALLOC };

static int who;
static void *(*mi_alloc)(size_t);
static void (*mi_release)(void *);

static unsigned char *alloc(size_t n)
{
	unsigned char *p = who == SECRETMEM ? secretmem_malloc(n) : who == GLIBC ? malloc(n) : mi_alloc(n);

	if (!p)
		_exit(3);
	return p;
}

static void release(unsigned char *p, size_t n)
{
	if (who == SECRETMEM) {
		secretmem_free(p);
		return;
	}
	explicit_bzero(p, n);
	if (who == GLIBC)
		free(p);
	else
		mi_release(p);
}

static void pairs(int n)
{
	for (int i = 0; i < n; i++) {
		unsigned char *p = alloc(32);
		memset(p, 1, 32);
		ESCAPE(p);
		release(p, 32);
	}
}

static void batch(void)
{
	static unsigned char *v[BATCH];

	for (int i = 0; i < BATCH; i++) {
		v[i] = alloc(32);
		memset(v[i], i | 1, 32);
		ESCAPE(v[i]);
	}
	for (int i = 0; i < BATCH; i++)
		release(v[i], 32);
}

static uint64_t rnd_state = 88172645463325252ull;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state >> 32);
}

static unsigned char *live[LIVE];
static size_t live_n[LIVE];

static void random_ops(int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t r = rnd();
		unsigned j = r % LIVE;
		size_t sz = 16 + (r >> 16) % 497;
		release(live[j], live_n[j]);
		live[j] = alloc(sz);
		memset(live[j], i | 1, sz);
		ESCAPE(live[j]);
		live_n[j] = sz;
	}
}

static void child(int workload)
{
	if (workload == 2)
		for (int j = 0; j < LIVE; j++) {
			live_n[j] = 16 + rnd() % 497;
			live[j] = alloc(live_n[j]);
			memset(live[j], 1, live_n[j]);
		}
	/* warm up: the caches and slabs this workload uses exist */
	if (workload == 0)
		pairs(1000);
	else if (workload == 1) /* a bin grows for bursts over a few rounds (tcache.c) */
		for (int r = 0; r < 10; r++)
			batch();
	else
		random_ops(10 * RANDOM_OPS);
	__asm__ volatile("int3");
	if (workload == 0)
		pairs(PAIRS);
	else if (workload == 1)
		batch();
	else
		random_ops(RANDOM_OPS);
	__asm__ volatile("int3");
	_exit(0);
}

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	static const char *const names[] = { "secretmem", "glibc+bzero", "mimalloc+bzero" };
	static const char *const what[] = { "32-byte pair", "block of the batch (1,000 x 32 B)",
					     "operation of random 16-512 B (1,000 live)" };
	static const int per[] = { PAIRS, BATCH, RANDOM_OPS };
	const char *a = argc > 1 ? argv[1] : "secretmem", *w = argc > 2 ? argv[2] : "pair";
	int workload = strcmp(w, "pair") == 0 ? 0 : strcmp(w, "batch") == 0 ? 1 : strcmp(w, "random") == 0 ? 2 : -1;
	int st;
	long steps = 0;

	who = strcmp(a, "secretmem") == 0 ? SECRETMEM : strcmp(a, "glibc") == 0 ? GLIBC : strcmp(a, "mimalloc") == 0 ? MIMALLOC : -1;
	if (who < 0 || workload < 0) {
		fprintf(stderr, "usage: pair_steps [secretmem|glibc|mimalloc [pair|batch|random]]\n");
		return 64;
	}
	if (who == MIMALLOC) {
		void *h = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
		if (h) {
			*(void **)&mi_alloc = dlsym(h, "mi_malloc");
			*(void **)&mi_release = dlsym(h, "mi_free");
		}
		if (!mi_alloc || !mi_release) {
			printf("mimalloc+bzero: not measured (libmimalloc.so.2: Debian package libmimalloc2.0)\n");
			return 0;
		}
	}
	pid_t c = fork();

	if (c < 0) {
		perror("fork");
		return 1;
	}
	if (c == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(2);
		raise(SIGSTOP);
		child(workload);
	}
	/* the SIGSTOP, then the first int3 */
	if (waitpid(c, &st, 0) != c || !WIFSTOPPED(st) || ptrace(PTRACE_CONT, c, NULL, NULL) != 0 ||
	    waitpid(c, &st, 0) != c || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
		fprintf(stderr, "pair_steps: the child did not reach its first stop\n");
		return 1;
	}
	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, c, NULL, NULL) != 0 || waitpid(c, &st, 0) != c || !WIFSTOPPED(st)) {
			fprintf(stderr, "pair_steps: the child ended before its second stop\n");
			return 1;
		}
		steps++;
		long rip = ptrace(PTRACE_PEEKUSER, c, offsetof(struct user_regs_struct, rip), NULL);
		long word = ptrace(PTRACE_PEEKTEXT, c, rip, NULL);
		if ((word & 0xff) == 0xcc)
			break;
	}
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	printf("%s: %.1f instructions per %s\n", names[who], (double)steps / per[workload], what[workload]);
	return 0;
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "pair_steps: x86-64 only\n");
	return 1;
#endif
}
