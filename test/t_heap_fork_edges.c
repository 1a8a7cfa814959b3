/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_fork_edges - awkward moments of heap mode, as an ordinary user
 * (uid 65534, no CAP_IPC_LOCK, a memory-lock limit):
 *
 *  sigfree:  a SIGALRM handler frees blocks every 200 us while the main
 *            thread forks 200 times: the handler's free is deferred while
 *            fork()'s handlers hold the allocator's locks (it waited for
 *            them on the same thread: a hang); each child allocates, which
 *            frees what was deferred before the fork, and exits 0.
 *  rawfork:  a child of _Fork() calls fork() before any malloc: its heap
 *            is reset first, and the fork works (it read the parent's
 *            regions, which it does not have: SIGSEGV); a raw child that
 *            reads memory the program locked gets SIGSEGV (documented).
 *  cancel:   a thread with a deferred cancellation pending allocates until
 *            secret memory is refused (64 KiB limit): the module's warning
 *            is printed, and the thread is cancelled at its own
 *            pthread_testcancel(), not inside malloc (the warning's write
 *            was a cancellation point).
 *  shrink:   realloc of a huge block (ordinary memory by design) to 512 KiB
 *            when secret memory refuses that (limit 256 KiB): the one
 *            warning; with
 *            SECRETMEM_REQUIRE=1, NULL with ENOMEM and the block intact (the
 *            block stayed in ordinary memory, silently).
 *  daemon:   daemon(3), whose fork is the C library's own, with no free
 *            descriptor for the heap's copy: the child says why it ends.
 *  align:    memalign(2 MiB, 16) is secret memory and takes 2 to 2.25 MiB
 *            of the memory-lock limit, as secretmem-heap(7) says.
 *  jump:     a SIGALRM handler leaves a malloc/free loop by siglongjmp
 *            until the thread is left inside the allocator for the module;
 *            then more blocks than the early arena holds: they go to
 *            ordinary memory after one warning (silently before).
 *  quiesce:  two threads replace published malloc() blocks all the time
 *            and the program's pthread_atfork prepare handler holds them
 *            during each of 200 forks (forkquiesce.c): every child finds
 *            each block as it was published, as secretmem-heap(7) says
 *            (the heap is copied while other threads run; the module's
 *            handlers are registered first, so the program's prepare
 *            handlers run before the copy).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include "forkquiesce.h"
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define POOL 20000

static void *pool[POOL];
static volatile int pool_next;

static void on_alarm(int sig)
{
	(void)sig;
	int i = pool_next;
	if (i < POOL) {
		free(pool[i]);
		pool_next = i + 1;
	}
}

static void on_watchdog(int sig)
{
	static const char msg[] = "sigfree: still forking after 60 s: a hang\n";
	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(9);
	_exit(9);
}

static int case_sigfree(void)
{
	struct sigaction sa;
	timer_t wd;
	struct sigevent ev;

	/* a hang ends the case: SIGUSR2 after 60 s */
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR2;
	signal(SIGUSR2, on_watchdog);
	struct itimerspec its = { { 0, 0 }, { 60, 0 } };
	TL_CHECK(timer_create(CLOCK_MONOTONIC, &ev, &wd) == 0 && timer_settime(wd, 0, &its, NULL) == 0,
		 "watchdog: %s", strerror(errno));

	for (int i = 0; i < POOL; i++) {
		pool[i] = malloc(64);
		TL_CHECK(pool[i], "malloc");
		memset(pool[i], 0x5a, 64);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &it, NULL);
	int forks = 0;
	for (int i = 0; i < 200; i++) {
		pid_t pid = fork();
		TL_CHECK(pid >= 0, "fork %d: %s", i, strerror(errno));
		if (pid == 0) {
			/* the frees deferred before the fork are done here */
			struct itimerval none = { { 0, 0 }, { 0, 0 } };
			setitimer(ITIMER_REAL, &none, NULL);
			void *q = malloc(64);
			free(q);
			_exit(q ? 0 : 3);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d: %s", i, tl_status_str(st));
		forks++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("sigfree: %d forks, %d frees in the handler\n", forks, pool_next);
	TL_CHECK(pool_next > 0, "the handler never ran");
	void *p = malloc(64); /* the deferred frees are done here */
	free(p);
	return 0;
}

static int case_rawfork(void)
{
	char *secret = calloc(1, 100);

	TL_CHECK(secret && hr_where(secret) == 's', "the parent's block is not in secret memory");
	strcpy(secret, "parent");
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); /* no handlers: a raw child */
	TL_CHECK(pid >= 0, "clone: %s", strerror(errno));
	if (pid == 0) {
		pid_t g = fork(); /* before any malloc */
		if (g < 0)
			_exit(3);
		if (g == 0) {
			char *q = malloc(64);
			_exit(q && hr_where(q) == 's' ? 0 : 4);
		}
		int st;
		if (waitpid(g, &st, 0) != g || !WIFEXITED(st))
			_exit(5);
		_exit(WEXITSTATUS(st));
	}
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the raw child's fork: %s", tl_status_str(st));
	printf("rawfork: a raw child's fork() before any malloc works\n");
	free(secret);
	/* memory the program locked is secret memory, copied by the fork
	 * handlers for fork() children only: a raw child faults on it */
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *locked = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TL_CHECK(locked != MAP_FAILED && mlock(locked, len) == 0, "mlock: %s", strerror(errno));
	memset(locked, 0x5a, len);
	TL_CHECK(hr_where(locked) == 's', "the locked range is not secret memory");
	pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	TL_CHECK(pid >= 0, "clone: %s", strerror(errno));
	if (pid == 0)
		_exit(((volatile unsigned char *)locked)[len - 1] == 0x5a ? 0 : 6);
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a raw child read locked memory: %s", tl_status_str(st));
	printf("rawfork: a raw child reading memory the program locked: %s\n", tl_status_str(st));
	munmap(locked, len);
	return 0;
}

static volatile int reached_testcancel;

static void *cancel_thread(void *arg)
{
	(void)arg;
	void *p[64];
	pthread_cancel(pthread_self()); /* pending: deferred */
	for (int i = 0; i < 64; i++)
		p[i] = malloc(16384); /* secret memory is refused on the way */
	reached_testcancel = 1;
	pthread_testcancel();
	for (int i = 0; i < 64; i++)
		free(p[i]);
	return NULL;
}

static int case_cancel(void)
{
	pthread_t t;
	void *ret;

	TL_CHECK(pthread_create(&t, NULL, cancel_thread, NULL) == 0, "pthread_create");
	TL_CHECK(pthread_join(t, &ret) == 0, "pthread_join");
	TL_CHECK(ret == PTHREAD_CANCELED, "the thread was not cancelled");
	TL_CHECK(reached_testcancel, "the thread was cancelled inside malloc, not at its pthread_testcancel()");
	printf("cancel: cancelled at pthread_testcancel(), after its mallocs\n");
	return 0;
}

static int case_shrink(int require)
{
	char *big = malloc(3 << 20); /* above the huge threshold: ordinary memory */

	TL_CHECK(big, "malloc(3 MiB): %s", strerror(errno));
	memset(big, 0x42, 3 << 20);
	errno = 0;
	char *small = realloc(big, 512 << 10);
	if (require) {
		TL_CHECK(!small && errno == ENOMEM, "REQUIRE: realloc to 512 KiB gave %p (%s), want NULL with ENOMEM",
			 (void *)small, strerror(errno));
		TL_CHECK(big[0] == 0x42 && big[(3 << 20) - 1] == 0x42, "the old block changed");
		free(big);
		printf("shrink, REQUIRE: NULL with ENOMEM, the block intact\n");
		return 0;
	}
	TL_CHECK(small && small[0] == 0x42 && small[(512 << 10) - 1] == 0x42, "realloc to 512 KiB: %s",
		 strerror(errno));
	printf("shrink: the block kept in ordinary memory ('%c')\n", hr_where(small));
	free(small);
	return 0;
}

/* memalign(2 MiB, 16) takes about 2 MiB of the memory-lock limit
 * (secretmem-heap(7), THE MALLOC API). */
static int case_align(void)
{
	size_t before = hr_vmlck();
	void *p = memalign(2 << 20, 16);

	TL_CHECK(p && ((uintptr_t)p & ((2 << 20) - 1)) == 0, "memalign(2 MiB, 16): %p", p);
	TL_CHECK(hr_where(p) == 's', "the aligned block is not in secret memory ('%c')", hr_where(p));
	size_t after = hr_vmlck();
	printf("align: memalign(2 MiB, 16) took %zu KiB of the limit\n", (after - before) >> 10);
	TL_CHECK(after - before >= (2u << 20) && after - before <= (2u << 20) + (256u << 10),
		 "memalign(2 MiB, 16) took %zu bytes of the limit, want about 2 MiB", after - before);
	free(p);
	return 0;
}

static sigjmp_buf jump_buf;

static void jump_out(int sig)
{
	(void)sig;
	siglongjmp(jump_buf, 1);
}

/* A SIGALRM handler jumps out of a malloc/free loop until one jump left
 * the allocator in the middle (the next block is not secret), then 3,000
 * blocks: more than the early arena holds. */
static int case_jump(void)
{
	struct sigaction sa;
	volatile int stale = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = jump_out;
	sigaction(SIGALRM, &sa, NULL);
	static void *keep[64];
	static unsigned long n;
	for (volatile int tries = 0; tries < 500 && !stale; tries++) {
		if (sigsetjmp(jump_buf, 1) == 0) {
			struct itimerval it = { { 0, 0 }, { 0, 200 } };
			setitimer(ITIMER_REAL, &it, NULL);
			for (;;) { /* sizes of every path: slabs, runs, large blocks */
				unsigned long i = n++ % 64;
				free(keep[i]);
				keep[i] = malloc(16 + (n * 37) % 3000);
			}
		}
		void *q = malloc(64);
		stale = hr_where(q) != 's';
		free(q);
	}
	if (!stale) {
		printf("jump: no jump left the allocator in the middle\n");
		return 0;
	}
	for (int i = 0; i < 3000; i++)
		TL_CHECK(malloc(64), "malloc");
	printf("jump: a thread left the allocator by siglongjmp, 3000 blocks made\n");
	return 0;
}

static void *heap_malloc(size_t n)
{
	return malloc(n);
}

static int case_quiesce(void)
{
	fq_start(heap_malloc, free);
	int torn = fq_torn_children(1, 200);
	printf("quiesce: writers held, %d of 200 children found a block with other contents\n", torn);
	printf("quiesce: writers not held, %d of 200 (for the record)\n", fq_torn_children(0, 200));
	fq_stop();
	return torn ? 1 : 0;
}

static int case_daemon(void)
{
	char *p = malloc(1000); /* a heap to copy */

	TL_CHECK(p, "malloc");
	memset(p, 1, 1000);
	fflush(NULL);
	/* no free descriptor: the heap's copy needs one */
	while (dup(2) >= 0)
		;
	if (daemon(1, 1) != 0)
		return 3;
	/* the child, if it ever runs its code: it has its heap */
	_exit(p[999] == 1 ? 0 : 4);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "sigfree"))
			return case_sigfree();
		if (!strcmp(argv[1], "rawfork"))
			return case_rawfork();
		if (!strcmp(argv[1], "cancel"))
			return case_cancel();
		if (!strcmp(argv[1], "shrink"))
			return case_shrink(getenv("SECRETMEM_REQUIRE") != NULL);
		if (!strcmp(argv[1], "daemon"))
			return case_daemon();
		if (!strcmp(argv[1], "align"))
			return case_align();
		if (!strcmp(argv[1], "quiesce"))
			return case_quiesce();
		if (!strcmp(argv[1], "jump"))
			return case_jump();
		return 2;
	}
	tl_need_secretmem();
	hr_module();
	static const struct {
		const char *name;
		size_t limit;
		const char *env;
		const char *want; /* in the output */
	} cases[] = {
		{ "sigfree", 8 << 20, NULL, "sigfree:" },
		{ "rawfork", 8 << 20, NULL, "rawfork:" },
		{ "cancel", 64 << 10, NULL, "secretmem-heap: warning: secret memory refused" },
		{ "shrink", 256 << 10, NULL, "secretmem-heap: warning: secret memory refused" },
		{ "shrink", 256 << 10, "SECRETMEM_REQUIRE=1", "shrink, REQUIRE: NULL with ENOMEM" },
		{ "daemon", 8 << 20, NULL, "the child ends with status 127" },
		{ "align", 8 << 20, NULL, "align: memalign(2 MiB, 16) took" },
		{ "quiesce", 8 << 20, NULL, "quiesce: writers held, 0 of 200" },
		{ "jump", 8 << 20, NULL, "jump: " },
	};
	static char out[1 << 16];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *env[] = { cases[i].env, NULL };
		int st = hr_run_user(argv[0], cases[i].name, 1, env, cases[i].limit, out, sizeof(out));
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			printf("%s", out);
			tl_skip("an ordinary user cannot run the tests here");
		}
		printf("== %s%s%s as an ordinary user: %s\n%s", cases[i].name, cases[i].env ? ", " : "",
		       cases[i].env ? cases[i].env : "", tl_status_str(st), out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cases[i].name);
		TL_CHECK(strstr(out, cases[i].want), "%s: no \"%s\" in its output", cases[i].name, cases[i].want);
		/* (a jump that never left the allocator in the middle in 500
		 * tries leaves nothing to check) */
		if (!strcmp(cases[i].name, "jump") && strstr(out, "a thread left the allocator"))
			TL_CHECK(strstr(out, "secretmem-heap: warning: blocks made inside the allocator go to ordinary "
					     "memory: the early arena is full"),
				 "jump: blocks went to ordinary memory without the warning");
	}
	return TL_PASS;
}
