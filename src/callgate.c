/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * callgate.c - the library's system calls against a seccomp filter that
 * another thread installs meanwhile.
 *
 * The library stops making the calls a filter could kill once it has seen
 * one (sm_filter_seen, sm_secret_new_off) - but a filter installed with
 * SECCOMP_FILTER_FLAG_TSYNC takes effect in every thread at once, also in
 * one that read those flags a moment before and is about to make such a
 * call (a memfd_secret child, the memory-lock figures, ftruncate, mincore):
 * that thread died of SIGSYS.  So each such call is a section that reads
 * the flags inside it:
 *
 *   sm_calls_enter(); if (!flag) call; sm_calls_leave();
 *
 * (sm_calls_enter_new() for the calls of new secret memory: it refuses with
 * -EPERM, leaving no section, once sm_secret_new_is_off()), and the code
 * that installs a filter for the program (the heap module's prctl and
 * syscall) closes the gate first: sm_install_begin() waits until no thread
 * is inside a section (new ones wait at the gate), the caller sets the
 * flags, installs and reads the filter, and sm_install_end() opens the gate.
 * A section that waited then finds the flags set.
 *
 * A section is a system call or a short run of them (the memfd_secret child
 * and its wait, a /proc file's open, read and close) and nothing else: no
 * lock, no allocation, no cancellation point.  So a thread inside always
 * leaves without waiting for anyone, and a thread that waits at the gate
 * may hold any lock: the installer takes none, and allocates nothing, while
 * the gate is closed.  A thread that never leaves its section (a signal
 * handler that jumps out of one) would hold the gate forever, and one that
 * never opens it (the same, out of an install) would close it forever: the
 * installer waits for at most GATE_WAIT_NS, and so does a section at the
 * gate, then each goes on as it did before the gate.  A signal handler on
 * the installing thread passes the gate (it cannot wait for its own
 * thread).  Sections nest (a signal handler's inside its thread's); a
 * thread counts once.  A child has one thread and no section open: fork()'s
 * child handler says so (sm_calls_child), and a raw child (rawchild.c),
 * which inherits the counts as they were, resets them at the gate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define GATE_WAIT_NS 1000000000LL /* 1 s */

static atomic_uint gate_inside;     /* threads in a section */
static atomic_uint gate_installing; /* filters being installed */
/* this thread: sections open, whether the outermost is counted in
 * gate_inside, installs in progress (a signal handler's inside another) */
static __thread unsigned t_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned t_counted __attribute__((tls_model("initial-exec")));
static __thread unsigned t_installing __attribute__((tls_model("initial-exec")));

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static long long mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* the vDSO: no system call */
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void sm_calls_child(void)
{
	atomic_store(&gate_installing, 0);
	atomic_store(&gate_inside, 0);
	t_depth = 0;
	t_counted = 0;
	t_installing = 0;
}

/* One turn of a wait: 1 when it has lasted GATE_WAIT_NS (the clock is
 * read every 1024 turns; *until 0 before the first reading). */
static int waited_enough(unsigned spins, long long *until)
{
	relax();
	if (spins & 1023)
		return 0;
	long long now = mono_ns();
	if (!*until)
		*until = now + GATE_WAIT_NS;
	return now > *until;
}

/* Wait while a filter is being installed: at most GATE_WAIT_NS (0), or
 * -1 when it still is. */
static int wait_open(void)
{
	long long until = 0;

	for (unsigned spins = 0; atomic_load_explicit(&gate_installing, memory_order_relaxed); spins++) {
		if (sm_gate_raw_child()) { /* the counts of the parent's threads */
			sm_calls_child();
			break;
		}
		if (waited_enough(spins, &until))
			return -1;
	}
	return 0;
}

void sm_calls_enter(void)
{
	if (t_depth || t_installing) { /* inside already, or the installer's own */
		t_depth++;
		return;
	}
	for (;;) {
		/* sequentially consistent, as the installer's pair is: one of
		 * the two sees the other */
		atomic_fetch_add(&gate_inside, 1);
		if (!atomic_load(&gate_installing))
			break;
		atomic_fetch_sub(&gate_inside, 1);
		if (wait_open()) { /* an install that never ends: in, counted */
			atomic_fetch_add(&gate_inside, 1);
			break;
		}
	}
	t_counted = 1;
	t_depth = 1;
}

void sm_calls_leave(void)
{
	/* t_depth is 0 in a child whose fork handler ran inside a section */
	if (!t_depth || --t_depth)
		return;
	if (t_counted) {
		t_counted = 0;
		atomic_fetch_sub(&gate_inside, 1);
	}
}

int sm_calls_enter_new(void)
{
	sm_calls_enter();
	if (!sm_secret_new_is_off())
		return 0;
	sm_calls_leave();
	return -EPERM;
}

void sm_close(int fd)
{
	sm_calls_enter();
	syscall(SYS_close, fd);
	sm_calls_leave();
}

void sm_install_begin(void)
{
	/* this thread's own section (a signal handler that installs while
	 * the thread was in one) cannot end before the handler does */
	unsigned own = t_counted;
	long long until = 0;

	if (sm_gate_raw_child())
		sm_calls_child();
	t_installing++;
	atomic_fetch_add(&gate_installing, 1);
	for (unsigned spins = 0; atomic_load(&gate_inside) > own && !waited_enough(spins, &until); spins++)
		;
}

void sm_install_end(void)
{
	atomic_fetch_sub(&gate_installing, 1);
	t_installing--;
}
