/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_sandbox_tsync - a seccomp filter that one thread installs for
 * every thread at once (SECCOMP_FILTER_FLAG_TSYNC) while the others are in
 * the middle of the library's own system calls (src/callgate.c): three
 * threads grow the heap (new chunks: the memfd_secret child, clone) and
 * free blocks of many pages (mincore), one thread waits in short sleeps
 * (the clearing of its dead stack frames: mincore), one asks mallinfo2()
 * over and over (the memory-lock figures: prlimit64, capget, /proc), and
 * the main thread
 * installs, at a random moment, a filter that allows the calls the program
 * and glibc's allocator make and kills the process at any other (mincore,
 * clone, memfd_secret, prlimit64, ftruncate, gettid, ...).  Every run must end cleanly: the calls
 * in flight end before the filter is in place, and none is made after it
 * (new blocks go to ordinary memory).  Without the gate about 1 run in 4
 * died of SIGSYS.  20 runs as root, 20 as uid 65534 under ulimit -l 8192.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "heaprig.h"
#include "helpers/seccomp_allow.h"
#include "tlib.h"

#define RUNS 20
#define KEEP 256

static atomic_int stop;
static atomic_long made;

/* For every thread: the calls this program makes after it, glibc's
 * allocator's among them (its heap trim opens /proc/sys/vm/overcommit_memory),
 * and none of the library's own (mincore, clone, memfd_secret, prlimit64,
 * ftruncate, gettid, ...): they kill the process. */
static int install_tsync(void)
{
	static const int allowed[] = { SYS_brk, SYS_clock_gettime, SYS_close, SYS_exit, SYS_exit_group, SYS_futex,
				       SYS_getpid, SYS_getrandom, SYS_madvise, SYS_mmap, SYS_mprotect, SYS_mremap,
				       SYS_munmap, SYS_openat, SYS_read, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_write,
				       SYS_writev, SYS_nanosleep, SYS_clock_nanosleep, SYS_restart_syscall,
				       SYS_sched_yield };

	return seccomp_allow_only(allowed, (int)(sizeof(allowed) / sizeof(allowed[0])), ALLOW_SYSCALL_TSYNC);
}

static void *grow(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	void *keep[KEEP];
	int n = 0;

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
	}
	while (n)
		free(keep[--n]);
	return NULL;
}

static void *figures(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct mallinfo2 mi = mallinfo2(); /* the memory-lock figures */
		if (mi.arena == 0)
			abort();
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		char frame[8192]; /* a dead frame to clear */
		memset(frame, 3, sizeof(frame));
		__asm__ volatile("" : : "r"(frame) : "memory");
		struct timespec t = { 0, 300000 };
		nanosleep(&t, NULL);
	}
	return NULL;
}

static void ms_sleep(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static int child(long seed)
{
	pthread_t t[5];

	TL_CHECK(hr_active(), "the heap module is not active");
	printf("start\n");
	fflush(stdout); /* stdio's buffer before the filter */
	for (long i = 0; i < 3; i++)
		TL_CHECK(pthread_create(&t[i], NULL, grow, (void *)(seed * 7 + i)) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[3], NULL, sleeper, NULL) == 0, "pthread_create");
	TL_CHECK(pthread_create(&t[4], NULL, figures, NULL) == 0, "pthread_create");
	ms_sleep(5 + seed * 37 % 40);
	long before = atomic_load(&made);
	TL_CHECK(install_tsync() == 0, "the filter: %s", strerror(errno));
	ms_sleep(60);
	atomic_store(&stop, 1);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	printf("%ld rounds before the filter, %ld after\nchild ok\n", before, atomic_load(&made) - before);
	return 0;
}

int main(int argc, char **argv)
{
	static char out[1 << 16];
	int died = 0;

	if (argc > 1)
		return child(atol(argv[1]));
	tl_need_secretmem();
	hr_module();
	for (int user = 0; user < 2; user++) {
		for (int i = 0; i < RUNS; i++) {
			char arg[16];
			snprintf(arg, sizeof(arg), "%d", i + 1);
			int st = hr_run_user(argv[0], arg, 1, NULL, user ? (size_t)8192 << 10 : 0, out, sizeof(out));
			if (user && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
				printf("%s", out);
				tl_skip("an ordinary user cannot run the tests here");
			}
			int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok");
			if (!ok || i == 0)
				printf("== run %d%s: %s\n%s", i + 1, user ? " (uid 65534, ulimit -l 8192)" : "",
				       tl_status_str(st), out);
			died += !ok;
		}
	}
	TL_CHECK(died == 0, "%d of %d runs did not end cleanly", died, 2 * RUNS);
	printf("%d runs ended cleanly\npass\n", 2 * RUNS);
	return 0;
}
