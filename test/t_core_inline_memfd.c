/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_inline_memfd - the library's memfd_secret(2) call is made in the
 * caller's own process only when no seccomp filter can act on it
 * (secretmem_supported(3)): the thread is the process's only one, has no
 * filter, and every signal but SIGSYS is blocked from the check to the
 * call.
 *
 *  1. a single-threaded process with no filter makes its calls in-process
 *     (sm_memfd_inline_calls counts them); while a second thread exists, and
 *     once a filter is installed, every call goes to the child;
 *  2. race with another thread: in each of RACE_CHILDREN fresh processes,
 *     a second thread (a raw clone, which the C library does not count, as
 *     a thread it knows of sends every call to the child without a check)
 *     installs a KILL_PROCESS filter on memfd_secret with
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
 *     child);
 *  6. (x86-64) a broker that answers openat with another process's status
 *     file (one thread, no filter), under a filter that kills memfd_secret:
 *     the file is not this thread's, the call goes to the child, the
 *     process lives;
 *  7. SIGSYS blocked and pending when the library is called: the calls go
 *     to the child, SIGSYS stays blocked and pending, the process lives; and
 *     SIGSYS blocked under a filter that traps openat: no check is made (it
 *     would meet the trap with SIGSYS blocked), the process lives;
 *  8. (x86-64) Syscall User Dispatch, which traps every system call to the
 *     program's SIGSYS handler and shows no filter: the call is made
 *     in-process through the handler, the process lives;
 *  9. a filter that answers openat with ERRNO(0) ("fd 0"): the library
 *     neither reads nor closes the program's stdin;
 * 10. a thread made with a raw clone (not counted by the C library): the
 *     call goes to the child;
 * 11. (root) a status file longer than the check's 2 KiB buffer (600
 *     supplementary groups: the Threads and Seccomp lines fall beyond it):
 *     the call goes to the child, though the same process made one
 *     in-process before its Groups line grew;
 * 12. (x86-64) a broker that answers openat with a file that is not procfs
 *     (/dev/null): the library neither reads nor closes it, so exactly one
 *     descriptor is left open, and checks no more (one trap for three
 *     regions); the calls go to the child.
 * Without the thread check, 2 kills some processes; without the blocked
 * signals, 3 does; with sigfillset's mask, 4 does; with SIGSYS blocked
 * during the check, 5 dies; without the Pid/Tgid check, 6 dies; with the
 * mask set (SIG_SETMASK) instead of added to, 7 dies, and without the rule
 * for a caller's blocked SIGSYS, 7 fails (a call made in-process); with SIGSYS blocked
 * for the call, 8 dies; without the procfs check, 9 fails; without the thread
 * count, 10 fails and 2 kills; with an 8 KiB status buffer, 11 fails; when
 * a failed check does not stick, 12 fails (each seen failing on a scratch
 * copy of syscall.c).
 * Each case runs in a process that has never made a thread: a fork child,
 * or in a ThreadSanitizer build (whose fork children have a thread of the
 * runtime's) a re-executed copy of this program; there, too, 10 fails
 * without the thread count and 1 without the in-process call (seen on a
 * scratch copy).  ThreadSanitizer runs a handler installed with sigaction
 * at its next interceptor, so there 3's filter comes at such points only.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
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

/*
 * The raw clone thread below runs with the first thread's thread pointer,
 * so in a ThreadSanitizer build it must not run instrumented code (it would
 * work on the first thread's state of the runtime at the same time): what
 * it runs is marked RAW (no instrumentation; raw system calls only), and
 * clone is glibc's, not the runtime's interceptor, which treats every clone
 * as a fork and would run its fork-child bookkeeping in our shared address
 * space (src/syscall.c does the same for the library's child).
 */
#if defined(__clang__) || defined(__GNUC__)
#define RAW __attribute__((no_sanitize_thread, noinline))
#else
#define RAW
#endif
#if defined(__SANITIZE_THREAD__)
#define T_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define T_TSAN 1
#endif
#endif
#ifdef T_TSAN
#include <dlfcn.h>
typedef int clone_fn(int (*)(void *), void *, int, void *, ...);
static clone_fn *glibc_clone(void)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	clone_fn *fn = h ? (clone_fn *)dlsym(h, "clone") : NULL;

	if (h)
		dlclose(h);
	return fn ? fn : clone;
}
#else
#define glibc_clone() clone
#endif

#define RACE_CHILDREN 150
#define RACE_WINDOW_US 3000 /* the filter comes within this after the start */
#define LOOP_US 6000        /* the first thread creates regions this long */

/* A filter with action for system call nr (raw calls: also from a signal
 * handler and the raw clone thread); tsync: for every thread of the
 * process. */
RAW static int install_filter(long nr, unsigned int action, int tsync)
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

RAW static int install_kill(int tsync)
{
	return install_filter(SYS_memfd_secret, SECCOMP_RET_KILL_PROCESS, tsync);
}

/* Open descriptors, counted without opening anything (under an openat
 * filter). */
static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
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
	TL_CHECK(tl_idle_start(&t) == 0, "pthread_create");
	in0 = sm_memfd_inline_calls();
	c0 = sm_memfd_calls();
	r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create with two threads: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	printf("two threads: %d of %d call(s) in-process\n", sm_memfd_inline_calls() - in0, sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 == 1 && sm_memfd_inline_calls() == in0,
		 "a call made while another thread exists was made in-process");
	tl_idle_stop(t);
	return 0;
}

/* A process that never made a thread (no shortcut): after a first call
 * in-process, a filter; the check reads Seccomp: 2 and sends the call to
 * the child. */
static int filter_condition(void *arg)
{
	(void)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	TL_CHECK(install_kill(0) == 0, "cannot install the seccomp filter");
	int in0 = sm_memfd_inline_calls(), c0 = sm_memfd_calls();
	r = secretmem_region_create(4096, 0); /* the child is killed: fallback */
	if (r)
		(void)secretmem_region_destroy(r);
	printf("one thread, KILL filter: %d of %d call(s) in-process; the process lives\n",
	       sm_memfd_inline_calls() - in0, sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 >= 1 && sm_memfd_inline_calls() == in0,
		 "a call made under a filter was made in-process");
	return 0;
}

/*
 * The second thread is made with a raw clone(CLONE_THREAD), which the C
 * library does not see (__libc_single_threaded stays 1), so that only the
 * library's own thread count sends the calls to the child.  It runs on its
 * own stack with the first thread's TLS and makes no call that could fail
 * and write errno; it exits when its function returns.
 */
static volatile long filter_at;
static volatile int filter_rc = 1, raw_stop;
static unsigned char raw_stack[65536] __attribute__((aligned(16)));

/* now_us for the raw clone thread: no library function */
RAW static long raw_now_us(void)
{
	struct timespec t;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

RAW static int filter_thread(void *arg)
{
	(void)arg;
	while (raw_now_us() < filter_at)
		;
	filter_rc = install_kill(1);
	return 0;
}

RAW static int idle_raw_thread(void *arg)
{
	(void)arg;
	while (!raw_stop)
		;
	return 0;
}

static int raw_thread(int (*fn)(void *))
{
	return glibc_clone()(fn, raw_stack + sizeof(raw_stack),
			     CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
			     NULL) < 0
		       ? -errno
		       : 0;
}

static int race_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct secretmem_region *r = secretmem_region_create(4096, 0); /* the probe: before the race */
	if (r)
		(void)secretmem_region_destroy(r);
	filter_at = now_us() + 100 + (long)(rand_r(&seed) % RACE_WINDOW_US);
	TL_CHECK(raw_thread(filter_thread) == 0, "clone(CLONE_THREAD)");
	create_loop();
	for (long end = now_us() + 2000000; filter_rc == 1 && now_us() < end;)
		; /* a busy machine: the thread may come late */
	TL_CHECK(filter_rc == 0, "the filter thread could not install its filter (%d)", filter_rc);
	return 0;
}

/* A thread the C library does not know of: the library's count sends the
 * call to the child (and every later one). */
static int raw_thread_case(void *arg)
{
	(void)arg;
	TL_CHECK(raw_thread(idle_raw_thread) == 0, "clone(CLONE_THREAD)");
	int in0 = sm_memfd_inline_calls(), c0 = sm_memfd_calls();
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	raw_stop = 1;
	printf("a raw clone thread: %d of %d call(s) in-process\n", sm_memfd_inline_calls() - in0,
	       sm_memfd_calls() - c0);
	TL_CHECK(sm_memfd_calls() - c0 == 1 && sm_memfd_inline_calls() == in0,
		 "a call made while a raw clone thread exists was made in-process");
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

/* 5 and 6: a broker-style SIGSYS handler that answers a trapped openat:
 * ENOENT (5), or a copy of broker_fd, a file it opened itself (6). */
static volatile sig_atomic_t traps;
static int broker_fd = -1;

static void on_sigsys(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;

	(void)sig;
	(void)si;
	traps++;
	long rc = -ENOENT;
	if (broker_fd >= 0) {
		lseek(broker_fd, 0, SEEK_SET);
		int fd = dup(broker_fd);
		rc = fd >= 0 ? fd : -errno;
	}
	uc->uc_mcontext.gregs[REG_RAX] = rc;
}

/* The program's SIGSYS handler, then a filter that traps openat. */
static int openat_to_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) != 0)
		return -errno;
	return install_filter(SYS_openat, SECCOMP_RET_TRAP, 0);
}

/*
 * 5 (broker 0): three regions, secret (made in the child: the check's
 * openat is answered ENOENT).  6 (broker 1): the broker answers with a
 * status file of the parent (this test's main process: one thread, no
 * filter), opened before the filters, and memfd_secret kills: the region
 * falls back (the child is killed), the process lives.  12 (broker 2): the
 * broker answers with /dev/null: one descriptor left open, one trap.
 */
static int trap_openat(void *arg)
{
	int broker = arg == (void *)1, devnull = arg == (void *)2;

	if (devnull) {
		broker_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		TL_CHECK(broker_fd >= 0, "open /dev/null: %s", strerror(errno));
	}
	int fds0 = count_fds();
	if (broker) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/status", (int)getppid());
		broker_fd = open(path, O_RDONLY | O_CLOEXEC);
		TL_CHECK(broker_fd >= 0, "open %s: %s", path, strerror(errno));
	}
	TL_CHECK(openat_to_handler() == 0 && (!broker || install_kill(0) == 0),
		 "cannot install the handler and the filters");
	int in0 = sm_memfd_inline_calls();
	for (int i = 0; i < 3; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "secretmem_region_create under an openat TRAP filter: %s", strerror(errno));
		TL_CHECK(broker || secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "the region is not secret");
		(void)secretmem_region_destroy(r);
	}
	int left = count_fds() - fds0;
	printf("openat %s: %d trap(s), 3 regions, %d in-process call(s), %d descriptor(s) left; the process lives\n",
	       broker	 ? "answered with another process's status"
	       : devnull ? "answered with /dev/null"
			 : "trapped to the program's handler",
	       (int)traps, sm_memfd_inline_calls() - in0, left);
	TL_CHECK(traps >= 1, "the check did not meet the openat filter");
	TL_CHECK(sm_memfd_inline_calls() == in0, "a call was made in-process under a filter");
	if (devnull) {
		TL_CHECK(traps == 1, "the check was made again after a file that is not procfs (%d traps)", (int)traps);
		TL_CHECK(left == 1, "%d descriptors left open, not 1 (the answer closed, or more checks)", left);
	}
	return 0;
}
#endif

/* 7: SIGSYS blocked and pending (its default action kills). */
static int sigsys_pending(void *arg)
{
	(void)arg;
	sigset_t sys, pend;
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	TL_CHECK(sigprocmask(SIG_BLOCK, &sys, NULL) == 0, "sigprocmask");
	TL_CHECK(raise(SIGSYS) == 0, "raise");
	int in0 = sm_memfd_inline_calls();
	for (int i = 0; i < 3; i++) {
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "secretmem_region_create with SIGSYS pending: %s", strerror(errno));
		(void)secretmem_region_destroy(r);
	}
	sigset_t now;
	TL_CHECK(sigprocmask(SIG_BLOCK, NULL, &now) == 0 && sigismember(&now, SIGSYS) == 1,
		 "the library unblocked SIGSYS");
	TL_CHECK(sigpending(&pend) == 0 && sigismember(&pend, SIGSYS) == 1, "the pending SIGSYS is gone");
	TL_CHECK(sm_memfd_inline_calls() == in0, "a call was made in-process with SIGSYS blocked");
	printf("SIGSYS blocked and pending: three regions made in the child, still blocked and pending\n");
	return 0;
}

/* 7b: SIGSYS blocked, and a filter that traps openat (with SIGSYS blocked
 * a trapped openat would kill the process). */
static int sigsys_blocked_trap(void *arg)
{
	(void)arg;
	sigset_t sys;
	sigemptyset(&sys);
	sigaddset(&sys, SIGSYS);
	TL_CHECK(sigprocmask(SIG_BLOCK, &sys, NULL) == 0, "sigprocmask");
	TL_CHECK(install_filter(SYS_openat, SECCOMP_RET_TRAP, 0) == 0, "cannot install the seccomp filter");
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create with SIGSYS blocked under an openat TRAP: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	printf("SIGSYS blocked under an openat TRAP filter: region made, the process lives\n");
	return 0;
}

/* 9: a filter that answers openat with ERRNO(0): openat "returns" 0, the
 * program's stdin (here a pipe holding a line), which the library must
 * neither read nor close. */
static int openat_errno0(void *arg)
{
	(void)arg;
	int p[2];
	TL_CHECK(pipe(p) == 0 && dup2(p[0], 0) == 0, "pipe");
	/* the write end closed: a library that reads stdin gets the line and
	 * EOF rather than blocking */
	TL_CHECK(write(p[1], "hello\n", 6) == 6 && close(p[1]) == 0, "write");
	TL_CHECK(install_filter(SYS_openat, SECCOMP_RET_ERRNO | 0, 0) == 0, "cannot install the seccomp filter");
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	char line[8] = { 0 };
	ssize_t n = read(0, line, sizeof(line) - 1);
	printf("openat answered 0 (stdin): stdin then reads %zd byte(s)%s\n", n, n == 6 ? ", untouched" : "");
	TL_CHECK(n == 6 && strcmp(line, "hello\n") == 0, "the library read or closed stdin (%zd: %s)", n,
		 n < 0 ? strerror(errno) : line);
	return 0;
}

/* 11: a status file longer than the check's buffer (root: setgroups). */
static int long_status(void *arg)
{
	static gid_t groups[600];
	(void)arg;

	struct secretmem_region *r = secretmem_region_create(4096, 0);
	TL_CHECK(r, "secretmem_region_create: %s", strerror(errno));
	(void)secretmem_region_destroy(r);
	int in0 = sm_memfd_inline_calls();
	TL_CHECK(in0 >= 1, "no call in-process before the groups were set");
	for (int i = 0; i < 600; i++)
		groups[i] = (gid_t)(1000000 + i);
	TL_CHECK(setgroups(600, groups) == 0, "setgroups: %s", strerror(errno));
	char buf[8192];
	int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	if (fd >= 0)
		close(fd);
	TL_CHECK(n > 2048, "the status file is only %zd bytes", n);
	for (int i = 0; i < 3; i++) {
		r = secretmem_region_create(4096, 0);
		TL_CHECK(r, "secretmem_region_create with a long status file: %s", strerror(errno));
		TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "the region is not secret");
		(void)secretmem_region_destroy(r);
	}
	printf("status file of %zd bytes: three regions, %d in-process call(s)\n", n, sm_memfd_inline_calls() - in0);
	TL_CHECK(sm_memfd_inline_calls() == in0, "a call was made in-process with a status file over 2 KiB");
	return 0;
}

#if defined(__x86_64__)
/* 8: a minimal Syscall User Dispatch interposer: every system call made
 * outside the stub traps to on_sud, which makes it from the stub; a trapped
 * rt_sigprocmask acts on the mask that sigreturn restores. */
#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#define SUD_ON 1
#define SUD_ALLOW 0
#define SUD_BLOCK 1
static volatile char sud_selector = SUD_ALLOW;
static volatile sig_atomic_t sud_traps;

extern long sud_stub(long nr, long a, long b, long c, long d, long e, long f);
extern void sud_restorer(void);
extern char sud_start[], sud_end[];
__asm__(".text\n.globl sud_start\nsud_start:\n"
	".globl sud_stub\nsud_stub:\n"
	" mov %rdi,%rax\n mov %rsi,%rdi\n mov %rdx,%rsi\n mov %rcx,%rdx\n"
	" mov %r8,%r10\n mov %r9,%r8\n mov 8(%rsp),%r9\n syscall\n ret\n"
	".globl sud_restorer\nsud_restorer:\n mov $15,%rax\n syscall\n nop\n"
	".globl sud_end\nsud_end:\n");

static void on_sud(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	greg_t *g = uc->uc_mcontext.gregs;
	long nr = g[REG_RAX];

	(void)sig;
	(void)si;
	sud_traps++;
	if (nr == SYS_rt_sigprocmask) {
		unsigned long *m = (unsigned long *)&uc->uc_sigmask;
		const unsigned long *set = (const unsigned long *)g[REG_RSI];
		unsigned long *oldset = (unsigned long *)g[REG_RDX], prev = m[0];
		if (set) {
			if (g[REG_RDI] == SIG_BLOCK)
				m[0] |= *set;
			else if (g[REG_RDI] == SIG_UNBLOCK)
				m[0] &= ~*set;
			else
				m[0] = *set;
		}
		if (oldset)
			*oldset = prev;
		g[REG_RAX] = 0;
		return;
	}
	g[REG_RAX] = sud_stub(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
}

static int sud_case(void *arg)
{
	(void)arg;
	unsigned long ksa[4] = { (unsigned long)on_sud, 0x04000000UL /* SA_RESTORER */ | SA_SIGINFO,
				 (unsigned long)sud_restorer, 0 };
	TL_CHECK(syscall(SYS_rt_sigaction, SIGSYS, ksa, NULL, (size_t)8) == 0, "rt_sigaction(SIGSYS)");
	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, SUD_ON, (unsigned long)sud_start,
		  (unsigned long)(sud_end - sud_start), &sud_selector) != 0)
		return 100; /* no Syscall User Dispatch (before 5.11): skip */
	int in0 = sm_memfd_inline_calls();
	sud_selector = SUD_BLOCK;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	int backend = r ? secretmem_region_backend(r) : -1;
	if (r)
		(void)secretmem_region_destroy(r);
	int inl = sm_memfd_inline_calls() - in0;
	sud_selector = SUD_ALLOW;
	printf("Syscall User Dispatch: region %s (%s), %d in-process call(s), %d trap(s); the process lives\n",
	       r ? "made" : "not made", backend >= 0 ? secretmem_backend_name(backend) : "-", inl, (int)sud_traps);
	TL_CHECK(r, "secretmem_region_create under Syscall User Dispatch");
	TL_CHECK(sud_traps > 0, "the dispatch did not trap");
	TL_CHECK(inl >= 1, "the call under Syscall User Dispatch was not made in-process");
	return 0;
}
#endif

/*
 * Each case runs in a fresh process, one that has never made a thread.  A
 * fork child is one, except in a ThreadSanitizer build, whose runtime starts
 * a thread of its own in every fork child (tl_fork_child_threads): there
 * the case runs in a re-executed copy of this program instead
 * ("case:N:ARG", N its place in cases[]), which has only the main thread
 * until the case makes one.
 */
static int reexec;

static int (*const cases[])(void *) = {
	conditions, filter_condition, raw_thread_case, race_thread, race_signal, sigsys_pending,
	openat_errno0, sigsys_blocked_trap, long_status,
#if defined(__x86_64__)
	race_internal, trap_openat, sud_case,
#endif
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int run_case(int (*fn)(void *), void *arg, char *out, size_t outlen)
{
	char how[64];
	size_t i = 0;

	if (!reexec)
		return tl_run_child(fn, arg, out, outlen);
	while (i < NCASES && cases[i] != fn)
		i++;
	TL_CHECK(i < NCASES, "a case missing from cases[]");
	snprintf(how, sizeof(how), "case:%zu:%lu", i, (unsigned long)(uintptr_t)arg);
	return tl_run_self("/proc/self/exe", how, NULL, out, outlen);
}

/* The re-executed program: the state a fork child would have inherited
 * (the library used once, by tl_need_secretmem), then the case. */
static int run_reexec(const char *how)
{
	size_t i;
	unsigned long arg;

	if (sscanf(how, "case:%zu:%lu", &i, &arg) != 2 || i >= NCASES)
		TL_FAIL("bad case %s", how);
	tl_need_secretmem();
	int rc = cases[i]((void *)(uintptr_t)arg);
	fflush(stdout);
	return rc;
}

static void race(const char *what, int (*fn)(void *))
{
	static char out[4096]; /* each process's fallback warning */
	int died = 0;

	for (int i = 0; i < RACE_CHILDREN; i++) {
		int st = run_case(fn, (void *)(uintptr_t)(i * 7919 + 17), out, sizeof(out));
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (died++ == 0)
				fprintf(stderr, "%s: process %d ended: %s\n%s", what, i, tl_status_str(st), out);
		}
	}
	printf("%s: %d of %d processes ended badly\n", what, died, RACE_CHILDREN);
	TL_CHECK(died == 0, "%s: a filter installed during the library's memfd_secret call killed %d process(es)",
		 what, died);
}

/* Run fn(arg) in a fresh process, show what it printed; it must exit 0. */
static int one(const char *what, int (*fn)(void *), void *arg)
{
	static char out[4096];
	int st = run_case(fn, arg, out, sizeof(out));

	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s child: %s", what, tl_status_str(st));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strncmp(argv[1], "case:", 5) == 0)
		return run_reexec(argv[1]);
	if (tl_under_valgrind())
		tl_skip("valgrind makes the call in-process and refuses it");
	tl_need_secretmem();
	int forked = tl_fork_child_threads();
	TL_CHECK(forked >= 1, "cannot count a fork child's threads");
	if (forked > 1) {
		reexec = 1;
		printf("a fork child has %d threads here (a sanitizer's): each case runs in a re-executed process\n",
		       forked);
	}
	one("conditions", conditions, NULL);
	one("filter", filter_condition, NULL);
	one("raw thread", raw_thread_case, NULL);
	race("filter from another thread (TSYNC)", race_thread);
	race("filter from a signal handler", race_signal);
#if defined(__x86_64__)
	race("filter from a handler of signal 32", race_internal);
	one("openat TRAP", trap_openat, NULL);
	one("broker", trap_openat, (void *)1);
#else
	printf("signal 32, openat TRAP and broker cases: x86-64 only\n");
#endif
	one("SIGSYS pending", sigsys_pending, NULL);
	one("openat ERRNO(0)", openat_errno0, NULL);
	one("SIGSYS blocked, openat TRAP", sigsys_blocked_trap, NULL);
	if (geteuid() == 0)
		one("long status file", long_status, NULL);
	else
		printf("long status file: needs root (setgroups), case skipped\n");
#if defined(__x86_64__)
	one("broker answering /dev/null", trap_openat, (void *)2);
#endif
#if defined(__x86_64__)
	char out[4096];
	int st = run_case(sud_case, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 100)
		printf("Syscall User Dispatch: not in this kernel, case skipped\n");
	else
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "Syscall User Dispatch child: %s", tl_status_str(st));
#endif
	printf("ok: memfd_secret in-process only where no filter can appear before it\n");
	return TL_PASS;
}
