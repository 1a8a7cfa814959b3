/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * callgate.c - the library's system calls against a seccomp filter that
 * another thread installs meanwhile.
 *
 * The library stops making the calls a filter could kill once it has seen
 * one (sm_filter_seen, sm_secret_new_off) - but a filter installed with
 * SECCOMP_FILTER_FLAG_TSYNC takes effect in every thread at once, also in
 * one that read those flags a moment before and is now in the middle of
 * making a chunk (a memfd_secret child, the memory-lock figures, mmap) or of
 * a mincore loop: that thread died of SIGSYS.  So such a sequence runs as a
 * section, which reads the flags inside it:
 *
 *   sm_calls_enter(); if (!flag) { ...calls... } sm_calls_leave();
 *
 * and the code that installs a filter for the program (the heap module's
 * prctl and syscall) closes the gate first: sm_install_begin() waits until
 * no thread is inside a section (new ones wait at the gate), the caller
 * sets the flags, installs, reads the filter, and sm_install_end() opens
 * the gate.  A section that waited then finds the flags set.  Sections
 * nest (a thread counts once); the wait is a spin with no system call,
 * since the filter may be in place while it spins.
 *
 * Nothing inside a section may wait for the installing thread, and the
 * installing thread takes no lock and allocates nothing while the gate is
 * closed (filtercheck.c reads the filter on its own stack).  A thread that
 * never leaves its section (cancelled or killed there) would hold the gate
 * forever: the installer waits for at most GATE_WAIT_NS, then goes on as
 * it did before this gate.  fork() is a section from the library's prepare
 * handler (the last to run) to its parent handler, the clone included; a
 * child has one thread and starts with no section (sm_calls_child).
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "internal.h"

#define GATE_WAIT_NS 1000000000LL /* 1 s */

static atomic_uint gate_inside;     /* threads in a section */
static atomic_uint gate_installing; /* filters being installed */
static __thread unsigned t_depth __attribute__((tls_model("initial-exec")));

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void sm_calls_enter(void)
{
	if (t_depth++)
		return;
	for (;;) {
		/* sequentially consistent, as the installer's pair is: one of
		 * the two sees the other */
		atomic_fetch_add(&gate_inside, 1);
		if (!atomic_load(&gate_installing))
			return;
		atomic_fetch_sub(&gate_inside, 1);
		while (atomic_load_explicit(&gate_installing, memory_order_relaxed))
			relax();
	}
}

void sm_calls_leave(void)
{
	/* t_depth is 0 here in a child whose handler ran in the section */
	if (t_depth && --t_depth == 0)
		atomic_fetch_sub(&gate_inside, 1);
}

static long long mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* the vDSO: no system call */
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void sm_install_begin(void)
{
	/* this thread's own section (a signal handler that installs while
	 * the thread was in one) cannot end before the handler does */
	unsigned own = t_depth ? 1 : 0;
	long long until = 0;

	atomic_fetch_add(&gate_installing, 1);
	for (unsigned spins = 0; atomic_load(&gate_inside) > own; spins++) {
		relax();
		if ((spins & 1023) == 0) {
			long long now = mono_ns();
			if (!until)
				until = now + GATE_WAIT_NS;
			else if (now > until)
				break;
		}
	}
}

void sm_install_end(void)
{
	atomic_fetch_sub(&gate_installing, 1);
}

void sm_calls_child(void)
{
	atomic_store(&gate_installing, 0);
	atomic_store(&gate_inside, 0);
	t_depth = 0;
}
