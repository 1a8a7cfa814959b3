/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_stackkey KEYFILE [prctl|seccomp|WAIT] - a program that leaves a key in dead stack frames,
 * as signing code does: it reads a 32-byte key into a malloc()ed buffer;
 * a worker thread waits 2 ms (under the module: a clearing), copies it
 * into a local array four calls deep, hashes it, returns and waits in
 * poll() (under the module: less than 10 ms after its last clearing); a second thread does the same and ends
 * (glibc keeps its stack for the next thread); then the main thread does
 * the same and waits in read().  The last copy also goes through vector
 * register xmm15 (each thread's), which nothing after it uses.  Prints
 * "worker LO HI" and "ended LO HI" (the threads' stacks) and "ready"
 * before the main thread's copy.
 *
 * With prctl or seccomp, every thread waits 2 ms first, then the main
 * thread installs a seccomp filter that kills the process at any system
 * call but the few the program makes from then on (mincore, fcntl,
 * preadv2, sched_getaffinity, openat are not among them): with
 * prctl(PR_SET_SECCOMP) for the main thread alone, or with
 * syscall(SYS_seccomp, ..., TSYNC) for all threads; only then do the
 * threads copy the key.
 *
 * With WAIT (one of the names wait_in() knows: test/t_heap_stack_waits
 * lists them), the main thread waits in that
 * call instead of read(), on something that never comes: a pipe, a socket
 * (a datagram one for recvmmsg),
 * the worker thread, a child that pauses, a signal, a semaphore, a
 * condition, a 60 s sleep.  The memo_* ones first make a descriptor number
 * one whose reads never wait (a regular file, or a pipe in non-blocking
 * mode) and read from it, then make it a blocking pipe through the named
 * call (close and pipe(), dup2, dup3, close_range, closefrom, fcntl(F_SETFL),
 * fcntl64, ioctl(FIONBIO)), then copy the key and read from it.
 */
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "seccomp_allow.h"

static unsigned char *key;
static volatile unsigned long sink;
static int started, sandbox, filtered;
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

/* Before the sandbox's filter: a first wait (the module learns the stack);
 * then wait until the filter is in. */
static void before_filter(void)
{
	if (!sandbox)
		return;
	poll(NULL, 0, 2);
	__atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&filtered, __ATOMIC_ACQUIRE))
		sched_yield();
}

static int install_filter(int tsync)
{
	static const int allowed[] = { SYS_read, SYS_write, SYS_poll, SYS_ppoll, SYS_futex, SYS_exit, SYS_exit_group,
				       SYS_madvise, SYS_munmap, SYS_mmap, SYS_mprotect, SYS_brk, SYS_rt_sigprocmask,
				       SYS_rt_sigreturn, SYS_clock_nanosleep, SYS_nanosleep, SYS_clock_gettime,
				       SYS_sched_yield, SYS_getpid, SYS_gettid, SYS_close, SYS_restart_syscall };
	return seccomp_allow_only(allowed, (int)(sizeof(allowed) / sizeof(allowed[0])),
				  tsync ? ALLOW_SYSCALL_TSYNC : ALLOW_PRCTL);
}

static void *ender(void *arg)
{
	(void)arg;
	my_stack(&ended_lo, &ended_hi);
	before_filter();
	use_key(4);
	return NULL;
}

static void *worker(void *arg)
{
	int *fds = arg;
	struct pollfd p = { .fd = fds[0], .events = POLLIN };

	my_stack(&worker_lo, &worker_hi);
	before_filter();
	poll(NULL, 0, 2);
	use_key(4);
	if (!sandbox)
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
	poll(&p, 1, -1);
	return NULL;
}

static const char *keypath;

/* fd: a descriptor whose reads never wait, read from once (the module
 * remembers that); then, through the call the mode names, the same number
 * becomes the read end of an empty blocking pipe. */
static int memo_fd(const char *how)
{
	int p[2], fd;
	char c;

	if (!strcmp(how, "memo_setfl") || !strcmp(how, "memo_fcntl64") || !strcmp(how, "memo_fionbio")) {
		if (pipe2(p, O_NONBLOCK) != 0 || read(p[0], &c, 1) != -1)
			exit(4);
		int off = 0;
		if (!strcmp(how, "memo_setfl") ? fcntl(p[0], F_SETFL, 0)
		    : !strcmp(how, "memo_fcntl64") ? fcntl64(p[0], F_SETFL, 0) : ioctl(p[0], FIONBIO, &off))
			exit(4);
		return p[0];
	}
	/* only the call under test may make the module forget fd's answer:
	 * nothing is closed or duplicated between the read and it */
	int dup = !strcmp(how, "memo_dup2") || !strcmp(how, "memo_dup3");
	if (dup && pipe(p) != 0)
		exit(4);
	fd = open(keypath, O_RDONLY); /* the highest descriptor */
	if (fd < 0 || read(fd, &c, 1) != 1)
		exit(4);
	if (dup) {
		if ((!strcmp(how, "memo_dup2") ? dup2(p[0], fd) : dup3(p[0], fd, O_CLOEXEC)) != fd)
			exit(4);
		return fd;
	}
	if (!strcmp(how, "memo_close"))
		close(fd);
	else if (!strcmp(how, "memo_close_range"))
		close_range((unsigned)fd, (unsigned)fd, 0);
	else if (!strcmp(how, "memo_closefrom"))
		closefrom(fd);
	else
		exit(64);
	if (pipe(p) != 0 || p[0] != fd) /* the number again */
		exit(4);
	return fd;
}

/* Copy the key, then wait in the call named by how; returns only on an
 * error (64: an unknown name). */
static int wait_in(const char *how, pthread_t worker_thread)
{
	int fds[2], fd = -1, ep;
	char buf[16];
	struct timespec far;
	sigset_t set;
	pid_t child = 0;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	static sem_t sem;

	clock_gettime(CLOCK_REALTIME, &far);
	far.tv_sec += 60;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (!strncmp(how, "memo_", 5))
		fd = memo_fd(how);
	else if (!strncmp(how, "recv", 4) || !strncmp(how, "accept", 6)) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "heap_stackkey-%d", (int)getpid());
		if (!strncmp(how, "accept", 6)) {
			if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 1) != 0)
				return 4;
			fd = s;
		} else if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0)
			fd = fds[0];
	} else if (!strcmp(how, "recvmmsg")) {
		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) == 0)
			fd = fds[0];
	} else if (pipe(fds) == 0)
		fd = fds[0];
	if (fd < 0 || sem_init(&sem, 0, 0) != 0 || sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return 4;
	if (!strncmp(how, "wait", 4)) {
		child = fork();
		if (child == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		if (child < 0)
			return 4;
	}
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(fd, &rs);
	ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
		return 4;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = msg };
	struct timespec sixty = { 60, 0 }, mono;
	siginfo_t si;
	int st, sig;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	mono.tv_sec += 60;
	pthread_mutex_lock(&m);
	use_key(4);
	if (!strncmp(how, "memo_", 5))
		return (int)read(fd, buf, 1);
	if (!strcmp(how, "readv"))
		return (int)readv(fd, &iov, 1);
	if (!strcmp(how, "recv"))
		return (int)recv(fd, buf, 1, 0);
	if (!strcmp(how, "recvfrom"))
		return (int)recvfrom(fd, buf, 1, 0, NULL, NULL);
	if (!strcmp(how, "recvmsg"))
		return (int)recvmsg(fd, &msg, 0);
	if (!strcmp(how, "recvmmsg"))
		return recvmmsg(fd, &mm, 1, 0, NULL);
	if (!strcmp(how, "accept"))
		return accept(fd, NULL, NULL);
	if (!strcmp(how, "accept4"))
		return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (!strcmp(how, "poll"))
		return poll(&p, 1, -1);
	if (!strcmp(how, "ppoll"))
		return ppoll(&p, 1, NULL, NULL);
	if (!strcmp(how, "select"))
		return select(fd + 1, &rs, NULL, NULL, NULL);
	if (!strcmp(how, "pselect"))
		return pselect(fd + 1, &rs, NULL, NULL, NULL, NULL);
	if (!strcmp(how, "epoll_wait"))
		return epoll_wait(ep, &out, 1, -1);
	if (!strcmp(how, "epoll_pwait"))
		return epoll_pwait(ep, &out, 1, -1, NULL);
	if (!strcmp(how, "epoll_pwait2"))
		return epoll_pwait2(ep, &out, 1, &sixty, NULL);
	if (!strcmp(how, "nanosleep"))
		return nanosleep(&sixty, NULL);
	if (!strcmp(how, "clock_nanosleep"))
		return clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &far, NULL);
	if (!strcmp(how, "usleep"))
		return usleep(60000000);
	if (!strcmp(how, "sleep"))
		return (int)sleep(60);
	/* a wake-up may be spurious (the module's split makes one): wait on */
	if (!strcmp(how, "cond_wait"))
		while (pthread_cond_wait(&cv, &m) == 0)
			;
	if (!strcmp(how, "cond_timedwait"))
		while (pthread_cond_timedwait(&cv, &m, &far) == 0)
			;
	if (!strcmp(how, "pause"))
		return pause();
	if (!strcmp(how, "sigsuspend")) {
		sigset_t none;
		sigemptyset(&none);
		sigaddset(&none, SIGUSR1);
		return sigsuspend(&none);
	}
	if (!strcmp(how, "sigwait"))
		return sigwait(&set, &sig);
	if (!strcmp(how, "sigwaitinfo"))
		return sigwaitinfo(&set, &si);
	if (!strcmp(how, "sigtimedwait"))
		return sigtimedwait(&set, &si, &sixty);
	if (!strcmp(how, "waitpid"))
		return waitpid(child, &st, 0);
	if (!strcmp(how, "wait"))
		return wait(&st);
	if (!strcmp(how, "waitid"))
		return waitid(P_PID, (id_t)child, &si, WEXITED);
	if (!strcmp(how, "wait4"))
		return wait4(child, &st, 0, NULL);
	if (!strcmp(how, "pthread_join"))
		return pthread_join(worker_thread, NULL);
	if (!strcmp(how, "pthread_timedjoin_np"))
		return pthread_timedjoin_np(worker_thread, NULL, &far);
	if (!strcmp(how, "pthread_clockjoin_np"))
		return pthread_clockjoin_np(worker_thread, NULL, CLOCK_MONOTONIC, &mono);
	if (!strcmp(how, "sem_wait"))
		return sem_wait(&sem);
	if (!strcmp(how, "sem_timedwait"))
		return sem_timedwait(&sem, &far);
	if (!strcmp(how, "sem_clockwait"))
		return sem_clockwait(&sem, CLOCK_MONOTONIC, &mono);
	return 64;
}

int main(int argc, char **argv)
{
	static int wfds[2], mfds[2];
	pthread_t t, e;
	char buf[16];
	volatile size_t len = 1;

	const char *how = NULL;

	if (argc < 2 || argc > 3)
		return 64;
	keypath = argv[1];
	sandbox = argc == 3 ? (strcmp(argv[2], "seccomp") == 0 ? 2 : strcmp(argv[2], "prctl") == 0 ? 1 : -1) : 0;
	if (sandbox < 0) {
		how = argv[2];
		sandbox = 0;
	}
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	key = malloc(32);
	if (fd < 0 || !key || read(fd, key, 32) != 32 || close(fd) != 0)
		return 1;
	if (pipe(wfds) != 0 || pipe(mfds) != 0 || pthread_create(&t, NULL, worker, wfds) != 0)
		return 1;
	if (sandbox) {
		if (pthread_create(&e, NULL, ender, NULL) != 0)
			return 1;
		while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 2)
			sched_yield();
		poll(NULL, 0, 2);
		printf("worker %lx %lx\nended %lx %lx\nready\n", (unsigned long)worker_lo, (unsigned long)worker_hi,
		       (unsigned long)ended_lo, (unsigned long)ended_hi);
		fflush(stdout);
		if (install_filter(sandbox == 2) != 0)
			return 3;
		__atomic_store_n(&filtered, 1, __ATOMIC_RELEASE);
		if (pthread_join(e, NULL) != 0)
			return 1;
	} else {
		while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
			sched_yield();
		if (pthread_create(&e, NULL, ender, NULL) != 0 || pthread_join(e, NULL) != 0)
			return 1;
		printf("worker %lx %lx\nended %lx %lx\nready\n", (unsigned long)worker_lo, (unsigned long)worker_hi,
		       (unsigned long)ended_lo, (unsigned long)ended_hi);
		fflush(stdout);
	}
	if (how)
		return wait_in(how, t);
	use_key(4);
	/* a length the compiler does not know: _FORTIFY_SOURCE makes this
	 * __read_chk, as in most distributions' programs */
	return read(mfds[0], buf, len) == 1 ? 0 : 2;
}
