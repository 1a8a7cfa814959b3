/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * syscall.c - the memfd_secret(2) wrapper and the support probe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"

/*
 * The number comes from the kernel headers when they know it; otherwise 447
 * on the architectures that wire the call (x86_64, i386, arm64, riscv, s390,
 * loongarch).  32-bit arm, powerpc and mips only reserve it.
 */
#if defined(SYS_memfd_secret)
#define SM_NR_MEMFD_SECRET SYS_memfd_secret
#elif defined(__NR_memfd_secret)
#define SM_NR_MEMFD_SECRET __NR_memfd_secret
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
	(defined(__riscv) && __riscv_xlen == 64) || defined(__s390x__) || defined(__loongarch__)
#define SM_NR_MEMFD_SECRET 447
#endif

static int raw_memfd_secret(unsigned int flags)
{
#ifdef SM_NR_MEMFD_SECRET
	int saved = errno;
	long fd = syscall(SM_NR_MEMFD_SECRET, flags);
	int rc = fd >= 0 ? (int)fd : -errno;

	errno = saved;
	return rc;
#else
	(void)flags;
	return -ENOSYS;
#endif
}

SM_API int secretmem_memfd(unsigned int flags)
{
	if (flags & ~(unsigned int)O_CLOEXEC)
		return -EINVAL;
	return raw_memfd_secret(flags);
}

int sm_memfd_secret(void)
{
	int rc = os_injected(OS_OP_MEMFD);

	return rc ? rc : raw_memfd_secret(O_CLOEXEC);
}

/* Seccomp mode from /proc/self/status: 0 none, 1 strict, 2 filter; -1 if
 * unknown (no /proc). */
static int seccomp_mode(void)
{
	int saved = errno, mode = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "Seccomp:", 8) == 0) {
				mode = (int)strtol(line + 8, NULL, 10);
				break;
			}
		}
		fclose(f);
	}
	errno = saved;
	return mode;
}

/*
 * Probe in a short-lived child made with a raw clone (no atfork handlers):
 * a filter that kills the caller with SIGSYS then only kills the child.
 * The child reports through a pipe; no report means it was killed.
 */
static int probe_in_child(void)
{
	int saved = errno, rc = -EPERM, fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0) {
		errno = saved;
		return -EPERM;
	}
	long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		int res = raw_memfd_secret(O_CLOEXEC);
		if (res >= 0)
			res = 0;
		ssize_t w = write(fds[1], &res, sizeof(res));
		(void)w;
		_exit(0);
	}
	close(fds[1]);
	if (pid > 0) {
		int res, status;
		ssize_t n;
		do {
			n = read(fds[0], &res, sizeof(res));
		} while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(res))
			rc = res;
		/* ECHILD when SIGCHLD is ignored: the child reaped itself */
		while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(fds[0]);
	errno = saved;
	return rc;
}

static int probe(void)
{
	int mode = seccomp_mode();

	if (mode == 1)
		return -EPERM; /* strict mode: only read/write/exit are allowed */
	if (mode != 0)
		return probe_in_child(); /* a filter, or no /proc to tell */
	int fd = raw_memfd_secret(O_CLOEXEC);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

#define PROBE_UNKNOWN 1 /* no valid result is positive */
static atomic_int probe_result = PROBE_UNKNOWN;

SM_API int secretmem_supported(void)
{
	int rc = atomic_load_explicit(&probe_result, memory_order_acquire);

	if (SM_UNLIKELY(rc == PROBE_UNKNOWN)) {
		/* two racing first calls both probe; the answers agree */
		rc = probe();
		if (rc != 0 && rc != -ENOSYS && rc != -EPERM && rc != -EACCES)
			return rc; /* transient (EMFILE...): do not cache */
		if (rc == -EACCES)
			rc = -EPERM;
		atomic_store_explicit(&probe_result, rc, memory_order_release);
	}
	return rc;
}
