/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_inline_memfd - the library's memfd_secret(2) call is made in the
 * caller's own process only when no seccomp filter can act on it
 * (secretmem_supported(3)): the thread is the process's only one, has no
 * filter, and every signal is blocked from the check to the call.
 *
 *  1. a single-threaded process with no filter makes its calls in-process
 *     (sm_memfd_inline_calls counts them); while a second thread exists, and
 *     once a filter is installed, every call goes to the child;
 *  2. race with another thread: in each of RACE_CHILDREN fresh processes,
 *     a second thread installs a KILL_PROCESS filter on memfd_secret with
 *     SECCOMP_FILTER_FLAG_TSYNC at a random moment while the first creates
 *     and destroys regions in a loop; every process must live (the
 *     creations after the filter fall back);
 *  3. race with a signal handler: the same with one thread, whose SIGALRM
 *     handler (timer at a random moment) installs the filter;
 *  4. (x86-64) the same with a handler of signal 32, one of the C library's
 *     internal signals that sigfillset(3) leaves out, set up with raw
 *     rt_sigaction and timer_create;
 *  5. (x86-64) a filter that traps openat, answered by the program's SIGSYS
 *     handler (a sandbox's broker): the check's read of /proc meets it, the
 *     handler runs, the process lives and its regions are made (in the
 *     child).
 * Without the thread check, 2 kills some processes; without the blocked
 * signals, 3 does; with sigfillset's mask, 4 does; with SIGSYS blocked
 * during the check, 5 does (each seen failing on a scratch copy of
 * syscall.c).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC 1
#endif

#define RACE_CHILDREN 150
#define RACE_WINDOW_US 3000 /* the filter comes within this after the start */
#define LOOP_US 6000        /* the first thread creates regions this long */

/* A filter with action for system call nr (raw calls: also from a signal
 * handler); tsync: for every thread of the process. */
static int install_filter(long nr, unsigned int action, int tsync)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(filter) / sizeof(filter[0])), filter };

	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog) != 0)
		return -errno;
	return 0;
}

static int install_kill(int tsync)
{
	return install_filter(SYS_memfd_secret, SECCOMP_RET_KILL_PROCESS, tsync);
}

static long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

/* Regions created and destroyed for LOOP_US; a failed creation is fine
 * (after the filter it may fall back or, under REQUIRE, fail). */
static int create_loop(void)
{
	long end = now_us() + LOOP_US;
	int made = 0;

	while (now_us() < end) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		if (r) {
			memset(secretmem_region_data(r), 0x5a, 64);
			(void)secretmem_region_destroy(r);
			made++;
		}
	}
	return made;
}

static atomic_int idle_stop;

static void *idle_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&idle_stop))
		usleep(200);
	return NULL;
}

static int conditions(void *arg)
{
	(void)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	int in0 = sm_memfd_inline_calls(), c0 = sm_memfd_calls();
	r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	printf("one thread, no filter: %d of %d call(s) in-process\n", sm_memfd_inline_calls() - in0,
	       sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 == 1 && sm_memfd_inline_calls() - in0 == 1,
		 "a single-threaded process without a filter did not make its call in-process");

	pthread_t t;
	TL_CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0, "pthread_create");
	in0 = sm_memfd_inline_calls();
	c0 = sm_memfd_calls();
	r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create with two threads: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	printf("two threads: %d of %d call(s) in-process\n", sm_memfd_inline_calls() - in0, sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 == 1 && sm_memfd_inline_calls() == in0,
		 "a call made while another thread exists was made in-process");
	atomic_store(&idle_stop, 1);
	pthread_join(t, NULL);

	TL_CHECK(install_kill(0) == 0, "cannot install the seccomp filter");
	in0 = sm_memfd_inline_calls();
	c0 = sm_memfd_calls();
	r = secretmem_region_create(4096, 0); /* the child is killed: fallback */
	if (r)
		(void)secretmem_region_destroy(r);
	printf("one thread, KILL filter: %d of %d call(s) in-process; the process lives\n",
	       sm_memfd_inline_calls() - in0, sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 >= 1 && sm_memfd_inline_calls() == in0,
		 "a call made under a filter was made in-process");
	return 0;
}

static volatile long filter_at;

static void *filter_thread(void *arg)
{
	(void)arg;
	while (now_us() < filter_at)
		;
	return (void *)(long)install_kill(1);
}

static int race_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0); /* the probe: before the race */
	if (r)
		(void)secretmem_region_destroy(r);
	filter_at = now_us() + 100 + (long)(rand_r(&seed) % RACE_WINDOW_US);
	pthread_t t;
	TL_CHECK(pthread_create(&t, NULL, filter_thread, NULL) == 0, "pthread_create");
	create_loop();
	void *rc;
	pthread_join(t, &rc);
	TL_CHECK(rc == NULL, "the filter thread could not install its filter (%ld)", (long)rc);
	return 0;
}

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	if (install_kill(0) != 0)
		_exit(3);
	errno = saved;
}

static int race_signal(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	if (r)
		(void)secretmem_region_destroy(r);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 0 }, { 0, 100 + (long)(rand_r(&seed) % RACE_WINDOW_US) } };
	TL_CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	create_loop();
	long fd = syscall(SYS_prctl, PR_GET_SECCOMP, 0L, 0L, 0L, 0L);
	TL_CHECK(fd == 2, "the handler did not run within the loop (seccomp mode %ld)", fd);
	return 0;
}

#if defined(__x86_64__)
#include <ucontext.h>

/* 4: signal 32 with a raw handler (glibc's sigaction refuses it). */
#define SIG_INTERNAL 32
extern void tl_sig_restorer(void);
__asm__(".text\n.globl tl_sig_restorer\ntl_sig_restorer:\n mov $15, %rax\n syscall\n");

static volatile sig_atomic_t internal_ran;

static void on_internal(int sig)
{
	(void)sig;
	if (install_kill(0) != 0)
		_exit(3);
	internal_ran = 1;
}

static int race_internal(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	if (r)
		(void)secretmem_region_destroy(r);
	/* the kernel's struct sigaction: handler, flags, restorer, mask */
	unsigned long ksa[4] = { (unsigned long)on_internal, 0x04000000UL /* SA_RESTORER */ | SA_RESTART,
				 (unsigned long)tl_sig_restorer, 0 };
	TL_CHECK(syscall(SYS_rt_sigaction, SIG_INTERNAL, ksa, NULL, (size_t)8) == 0, "rt_sigaction(32)");
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIG_INTERNAL;
	int timer = -1;
	TL_CHECK(syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &timer) == 0, "timer_create");
	struct itimerspec its = { { 0, 0 }, { 0, (100 + (long)(rand_r(&seed) % RACE_WINDOW_US)) * 1000 } };
	TL_CHECK(syscall(SYS_timer_settime, timer, 0, &its, NULL) == 0, "timer_settime");
	create_loop();
	TL_CHECK(internal_ran, "the signal 32 handler did not run within the loop");
	return 0;
}

/* 5: a broker-style SIGSYS handler that answers a trapped openat. */
static volatile sig_atomic_t traps;

static void on_sigsys(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;

	(void)sig;
	(void)si;
	traps++;
	uc->uc_mcontext.gregs[REG_RAX] = -ENOENT;
}

static int trap_openat(void *arg)
{
	(void)arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	TL_CHECK(sigaction(SIGSYS, &sa, NULL) == 0, "sigaction(SIGSYS)");
	TL_CHECK(install_filter(SYS_openat, SECCOMP_RET_TRAP, 0) == 0, "cannot install the seccomp filter");
	int in0 = sm_memfd_inline_calls();
	for (int i = 0; i < 3; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "secretmem_region_create under an openat TRAP filter: %s", strerror(errno));
		TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "the region is not secret");
		(void)secretmem_region_destroy(r);
	}
	printf("openat trapped to the program's handler: %d trap(s), 3 secret regions, %d in-process call(s)\n",
	       (int)traps, sm_memfd_inline_calls() - in0);
	TL_CHECK(traps >= 1, "the check did not meet the openat filter");
	TL_CHECK(sm_memfd_inline_calls() == in0, "a call was made in-process under a filter");
	return 0;
}
#endif

static void race(const char *what, int (*fn)(void *))
{
	static char out[4096]; /* each process's fallback warning */
	int died = 0;

	for (int i = 0; i < RACE_CHILDREN; i++) {
		int st = tl_run_child(fn, (void *)(uintptr_t)(i * 7919 + 17), out, sizeof(out));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (died++ == 0)
				fprintf(stderr, "%s: process %d ended: %s\n%s", what, i, tl_status_str(st), out);
		}
	}
	printf("%s: %d of %d processes ended badly\n", what, died, RACE_CHILDREN);
	TL_CHECK(died == 0, "%s: a filter installed during the library's memfd_secret call killed %d process(es)",
		 what, died);
}

int main(void)
{
	char out[4096];

	if (tl_under_valgrind())
		tl_skip("valgrind makes the call in-process and refuses it");
	tl_need_secretmem();
	int st = tl_run_child(conditions, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "conditions child: %s", tl_status_str(st));
	race("filter from another thread (TSYNC)", race_thread);
	race("filter from a signal handler", race_signal);
#if defined(__x86_64__)
	race("filter from a handler of signal 32", race_internal);
	st = tl_run_child(trap_openat, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "openat TRAP child: %s", tl_status_str(st));
#else
	printf("signal 32 and openat TRAP cases: x86-64 only\n");
#endif
	printf("ok: memfd_secret in-process only where no filter can appear before it\n");
	return TL_PASS;
}
