/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_sandbox_tsync - seccomp filters that one thread installs for
 * every thread at once (SECCOMP_FILTER_FLAG_TSYNC) while the others are in
 * the middle of the library's own system calls (src/callgate.c).
 *  - "kill": three threads grow the heap (new chunks and regions: the
 *    memfd_secret child, the memory-lock figures, ftruncate) and free
 *    blocks of many pages (mincore), one waits in 2 ms sleeps (the clearing
 *    of its dead stack frames: gettid, mincore), one asks mallinfo2() over
 *    and over (prlimit64, capget, /proc); once each has gone round, the
 *    main thread installs, at a random moment, a filter that allows the
 *    calls the program and glibc's allocator make and kills the process at
 *    any other.  Every run must end cleanly: the calls in flight end before
 *    the filter is in place, and none is made after it (new blocks go to
 *    ordinary memory).  Without the gate 33 runs of 40 died of SIGSYS.
 *    20 runs as root, 20 as uid 65534 under ulimit -l 8192.
 *  - "stall": a filter that allows everything, installed 300 times while
 *    one thread forks, one makes raw children (_Fork, which run no fork
 *    handler) that read from a pipe, and two allocate, free and trim,
 *    after a thread was cancelled in read(): no install takes 0.5 s (a
 *    section that never ends, or a thread that waits at the gate holding
 *    a lock that a thread inside needs, made installs wait the gate's full
 *    second), and every raw child ends.  As root and as uid 65534.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heaprig.h"
#include "helpers/seccomp_allow.h"
#include "tlib.h"

#define RUNS 20
#define KEEP 256
#define INSTALLS 300

extern pid_t _Fork(void);

static atomic_int stop, ready, hung;
static atomic_long made;

static void ms_sleep(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- kill ------------------------------------------------------------------ */

/* For every thread: the calls this program makes after it, glibc's
 * allocator's among them (its heap trim opens /proc/sys/vm/overcommit_memory),
 * and the waiting call of a sleep the module splits (ppoll: secretmem-heap(7)
 * says why it is not covered), but none of the library's own (mincore,
 * clone, memfd_secret, prlimit64, ftruncate, gettid, ...): they kill the
 * process. */
static int install_allowlist(void)
{
	static const int allowed[] = { SYS_brk, SYS_clock_gettime, SYS_close, SYS_exit, SYS_exit_group, SYS_futex,
				       SYS_getpid, SYS_getrandom, SYS_madvise, SYS_mmap, SYS_mprotect, SYS_mremap,
				       SYS_munmap, SYS_openat, SYS_read, SYS_rt_sigprocmask, SYS_rt_sigreturn,
				       SYS_write, SYS_writev, SYS_nanosleep, SYS_clock_nanosleep, SYS_ppoll,
				       SYS_restart_syscall, SYS_sched_yield };

	return seccomp_allow_only(allowed, (int)(sizeof(allowed) / sizeof(allowed[0])), ALLOW_SYSCALL_TSYNC);
}

static void *grow(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	void *keep[KEEP];
	int n = 0, first = 1;

	while (!atomic_load(&stop)) {
		size_t big = 16384 + rand_r(&seed) % (900u << 10);
		char *p = malloc(big);
		if (p) { /* a region of its own (memfd_secret), many pages (mincore) */
			for (size_t k = 0; k < big; k += 65536)
				p[k] = 1;
			free(p);
		}
		if (n == KEEP) {
			while (n)
				free(keep[--n]);
		}
		keep[n] = malloc(4096 + rand_r(&seed) % 12000); /* new chunks */
		if (keep[n]) {
			memset(keep[n], 2, 64);
			n++;
		}
		atomic_fetch_add(&made, 1);
		if (first)
			atomic_fetch_add(&ready, 1);
		first = 0;
	}
	while (n)
		free(keep[--n]);
	return NULL;
}

static void *figures(void *arg)
{
	int first = 1;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct mallinfo2 mi = mallinfo2(); /* the memory-lock figures */
		if (mi.arena == 0)
			abort();
		if (first)
			atomic_fetch_add(&ready, 1);
		first = 0;
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	int first = 1;

	(void)arg;
	while (!atomic_load(&stop)) {
		char frame[8192]; /* a dead frame to clear */
		memset(frame, 3, sizeof(frame));
		__asm__ volatile("" : : "r"(frame) : "memory");
		ms_sleep(2); /* 1 ms and longer: cleared before it */
		if (first)
			atomic_fetch_add(&ready, 1);
		first = 0;
	}
	return NULL;
}

static int kill_case(long seed)
{
	pthread_t t[5];
	struct sm_heap_stats a;

	TL_CHECK(hr_active(), "the heap module is not active");
	printf("start\n");
	fflush(stdout); /* stdio's buffer before the filter */
	for (long i = 0; i < 3; i++)
		TL_CHECK(pthread_create(&t[i], NULL, grow, (void *)(seed * 7 + i)) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[3], NULL, sleeper, NULL) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[4], NULL, figures, NULL) == 0, "pthread_create");
	while (atomic_load(&ready) < 5)
		ms_sleep(1);
	TL_CHECK(hr_stats(0, &a) == 0, "figures"); /* before /proc is refused */
	ms_sleep(seed * 37 % 40);
	long before = atomic_load(&made);
	TL_CHECK(install_allowlist() == 0, "the filter: %s", strerror(errno));
	ms_sleep(60);
	atomic_store(&stop, 1);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	printf("%ld rounds before the filter, %ld after; %llu stack clearings before it\nchild ok\n", before,
	       atomic_load(&made) - before, (unsigned long long)a.stack_clearings);
	TL_CHECK(a.stack_clearings > 0, "no stack clearing before the filter");
	return 0;
}

/* ---- stall ----------------------------------------------------------------- */

static int fds[2];

static void *cancelled_reader(void *arg)
{
	char c;

	(void)arg;
	pthread_cancel(pthread_self()); /* acted on at the next cancellation point */
	if (read(fds[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		fflush(NULL);
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	return NULL;
}

/* Raw children: each reads a byte from a pipe 5 times (the module's read:
 * a section) and ends; one still running after 3 s hung at the gate (a
 * child that kept its parent's counts would wait a second at each). */
static void *raw_forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop) && !atomic_load(&hung)) {
		pid_t p = _Fork();
		if (p == 0) {
			int fd[2], k = 0;
			char c = 1;
			if (pipe(fd) == 0)
				while (k < 5 && syscall(SYS_write, fd[1], &c, 1) == 1 && read(fd[0], &c, 1) == 1)
					k++;
			_exit(k == 5 ? 0 : 1);
		}
		if (p < 0)
			continue;
		int st = 0, done = 0;
		for (int i = 0; i < 300 && !done; i++) {
			done = waitpid(p, &st, WNOHANG) == p;
			if (!done)
				ms_sleep(10);
		}
		if (!done) {
			atomic_store(&hung, p);
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
		}
	}
	return NULL;
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	void *keep[64];

	while (!atomic_load(&stop)) {
		for (int i = 0; i < 64; i++) {
			size_t n = 4096 + rand_r(&seed) % (200u << 10);
			keep[i] = malloc(n);
			if (keep[i])
				memset(keep[i], 1, n < 8192 ? n : 8192);
		}
		for (int i = 0; i < 64; i++)
			free(keep[i]);
		malloc_trim(0);
	}
	return NULL;
}

static int stall_case(void)
{
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, f };
	pthread_t t[4];
	void *r;
	double worst = 0;
	int slow = 0;
	unsigned seed = 1;

	TL_CHECK(hr_active(), "the heap module is not active");
	TL_CHECK(pipe(fds) == 0, "pipe");
	TL_CHECK(pthread_create(&t[0], NULL, cancelled_reader, NULL) == 0, "pthread_create");
	pthread_join(t[0], &r);
	TL_CHECK(r == PTHREAD_CANCELED, "the reader was not cancelled");
	TL_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
	TL_CHECK(pthread_create(&t[0], NULL, forker, NULL) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[1], NULL, raw_forker, NULL) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[2], NULL, churn, (void *)1L) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[3], NULL, churn, (void *)2L) == 0, "pthread_create");
	for (int i = 0; i < INSTALLS; i++) {
		struct timespec gap = { 0, (long)(rand_r(&seed) % 2000) * 1000L };
		nanosleep(&gap, NULL);
		double t0 = now();
		TL_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0,
			 "install %d: %s", i, strerror(errno));
		double d = now() - t0;
		worst = d > worst ? d : worst;
		slow += d > 0.5;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%d installs: the longest %.3f s, %d over 0.5 s; raw child hung: %d\n", INSTALLS, worst, slow,
	       atomic_load(&hung));
	TL_CHECK(slow == 0, "installs waited for a section that did not end");
	TL_CHECK(!atomic_load(&hung), "a raw child hung");
	printf("child ok\n");
	return 0;
}

/* ---- the runs ---------------------------------------------------------------- */

static int run(const char *self, const char *arg, int user, char *out, size_t len)
{
	int st = hr_run_user(self, arg, 1, NULL, user ? (size_t)8192 << 10 : 0, out, len);

	if (user && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("%s", out);
		tl_skip("an ordinary user cannot run the tests here");
	}
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok") ? 0 : st ? st : -1;
}

int main(int argc, char **argv)
{
	static char out[1 << 16];
	int died = 0;

	if (argc > 1)
		return !strcmp(argv[1], "stall") ? stall_case() : kill_case(atol(argv[1]));
	tl_need_secretmem();
	hr_module();
	for (int user = 0; user < 2; user++) {
		const char *who = user ? " (uid 65534, ulimit -l 8192)" : "";
		for (int i = 0; i < RUNS; i++) {
			char arg[16];
			snprintf(arg, sizeof(arg), "%d", i + 1);
			int st = run(argv[0], arg, user, out, sizeof(out));
			if (st || i == 0)
				printf("== kill, run %d%s: %s\n%s", i + 1, who, st ? tl_status_str(st) : "ok", out);
			died += st != 0;
		}
		int st = run(argv[0], "stall", user, out, sizeof(out));
		printf("== stall%s: %s\n%s", who, st ? tl_status_str(st) : "ok", out);
		TL_CHECK(st == 0, "stall%s", who);
	}
	TL_CHECK(died == 0, "kill: %d of %d runs did not end cleanly", died, 2 * RUNS);
	printf("kill: %d runs ended cleanly\npass\n", 2 * RUNS);
	return 0;
}
