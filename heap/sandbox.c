/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * sandbox.c - seccomp filters and the module's own system calls.
 *
 * A seccomp filter allows the system calls its program makes, and may kill
 * the process at any other (systemd's SystemCallFilter, OpenSSH's privsep
 * child, libseccomp users).  The clearing of dead stack frames
 * (stackclear.c, waits.c) makes calls of its own - mincore, gettid,
 * poll, fcntl, fstat, rt_sigprocmask, pthread_getattr_np's
 * sched_getaffinity - so once the process has a filter it makes none: it clears only the part of each
 * thread's stack that it saw holding memory before, and asks nothing
 * about descriptors.
 *
 * A filter is seen when the process has one at the module's start
 * (/proc/self/status, Seccomp:), and when the program installs one through
 * prctl(PR_SET_SECCOMP) or syscall(SYS_seccomp) (mmcalls.c), as glibc and
 * libseccomp do; a system call of the program's own instruction is not
 * seen, nor a filter another process attaches.  Unreadable status counts as
 * a filter.  Once one is seen the library asks no mincore(2) either; a
 * filter the program installs is read first (filtercheck.c), and one that
 * would stop the calls of new secret memory stops the library making any.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include "slab.h"
#include "internal.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))

static int sandboxed;

int hp_sandboxed(void)
{
	return __atomic_load_n(&sandboxed, __ATOMIC_RELAXED);
}

void hp_sandbox_seen(void)
{
	__atomic_store_n(&sandboxed, 1, __ATOMIC_RELAXED);
	sm_filter_seen(); /* the library: no mincore from now on */
	hp_stack_sandboxed();
}

static int installs(unsigned long mode, const void *prog)
{
	return mode == SECCOMP_MODE_STRICT || (mode == SECCOMP_MODE_FILTER && prog);
}

/* The program's call that may install seccomp mode `mode` (strict, or the
 * filter prog) is about to be made: the module makes no call from now on
 * that a filter could stop (a call that cannot install one - libseccomp's
 * probes, a NULL filter - changes nothing). */
void hp_sandbox_before(unsigned long mode, const void *prog)
{
	if (installs(mode, prog)) {
		/* the calls other threads are making end first (a filter
		 * with TSYNC applies to them at once) */
		sm_install_begin();
		hp_sandbox_seen();
	}
}

/* ... and was made: when it installed the mode, and that stops a call of
 * new secret memory (filtercheck.c reads the filter, which the kernel has
 * just read too), no new secret memory from now on. */
void hp_sandbox_after(long result, unsigned long mode, const void *prog)
{
	if (!installs(mode, prog))
		return;
	if (result == 0 && (mode != SECCOMP_MODE_FILTER || !hp_filter_check(prog)))
		sm_secret_new_off();
	sm_install_end();
}

HP_REAL(prctl)

void hp_sandbox_check(void)
{
	int mode;
	long filters;

	resolve_prctl();
	if (sm_seccomp_state(&mode, &filters) != 0 || mode != 0)
		hp_sandbox_seen();
}

HP_EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	resolve_prctl();
	if (option != PR_SET_SECCOMP)
		return real_prctl(option, a[0], a[1], a[2], a[3]);
	hp_sandbox_before(a[0], (const void *)a[1]); /* the filter applies at once */
	int r = real_prctl(option, a[0], a[1], a[2], a[3]);
	hp_sandbox_after(r, a[0], (const void *)a[1]);
	return r;
}
