/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * heap_stackkey KEYFILE [prctl|seccomp] - a program that leaves a key in dead stack frames,
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
 */
#include <fcntl.h>
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
	enum { N = sizeof(allowed) / sizeof(allowed[0]) };
	struct sock_filter f[N + 6];
	int k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int i = 0; i < N; i++) /* allowed[i]: jump to the last-but-one (ALLOW) */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
						      (unsigned char)(N - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { (unsigned short)k, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (tsync)
		return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0 ? 0 : -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
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

int main(int argc, char **argv)
{
	static int wfds[2], mfds[2];
	pthread_t t, e;
	char buf[16];
	volatile size_t len = 1;

	if (argc < 2 || argc > 3)
		return 64;
	sandbox = argc == 3 ? (strcmp(argv[2], "seccomp") == 0 ? 2 : strcmp(argv[2], "prctl") == 0 ? 1 : -1) : 0;
	if (sandbox < 0)
		return 64;
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
	use_key(4);
	/* a length the compiler does not know: _FORTIFY_SOURCE makes this
	 * __read_chk, as in most distributions' programs */
	return read(mfds[0], buf, len) == 1 ? 0 : 2;
}
