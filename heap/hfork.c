/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * hfork.c - heap mode's fork(): a child never runs without its heap.
 *
 * The library's fork handlers copy the heap into a new secret memory file
 * for the child (fork.c; the parent needs its own secret memory plus one
 * window of locked memory for that, the child maps the file against its own
 * limit).  When the copy cannot be made all the same - the memory-lock limit
 * leaves not even a page of room, no descriptor is left, secret memory is
 * refused - the library's child handler ends the child at once (heap mode
 * made fork strict: sm_fork_set_strict), before any of the program's code
 * runs in it, and this fork() reaps that child and fails with ENOMEM after
 * one warning with the figures (when the program's seccomp filter would
 * stop the copy's calls, filtercheck.c, fork() fails so before making a
 * child).  A fork that another function of the C library makes (daemon,
 * forkpty: glibc's internal fork, not interposed) runs the same handlers;
 * its child says why it ends (sm_fork_reaped).  The parent's SIGCHLD handler, if it has
 * one, may see that child end.  glibc's fork() does the rest (its handlers,
 * the other libraries' handlers; streams.c's keep it off the program's
 * streams, which are heap blocks); _Fork(), vfork() and raw clone(2) are not
 * interposed: see rawchild.c for the children they make.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "hp.h"

#define HP_EXPORT __attribute__((visibility("default")))

typedef pid_t (*fork_fn)(void);

static void say_failed(int err, size_t need)
{
	char a[24], b[24], c[24], msg[320];
	int unlimited;
	size_t limit, locked;
	const char *why = sm_fork_error_text(err);

	sm_memlock_figures(&unlimited, &limit, &locked);
	size_t n = 0;
	const char *parts[] = { "fork: no copy of the heap for the child (", why, ": ", sm_utoa(need >> 10, a),
				" KiB to copy; memory-lock limit ", unlimited ? "unlimited" : sm_utoa(limit >> 10, b),
				unlimited ? "" : " KiB", ", ", sm_utoa(locked >> 10, c),
				" KiB locked): fork() fails with ENOMEM" };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		for (const char *p = parts[i]; *p && n + 1 < sizeof(msg); p++)
			msg[n++] = *p;
	msg[n] = '\0';
	sm_warn(msg, NULL, NULL);
}

HP_EXPORT pid_t fork(void)
{
	static fork_fn real;
	fork_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (fork_fn)dlsym(RTLD_NEXT, "fork");
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	size_t secret, fallback;
	region_backend_totals(&secret, &fallback);
	if (secret && sm_secret_new_is_off()) {
		/* the copy would take calls the program's filter stops
		 * (filtercheck.c): no child at all */
		hp_say("fork: no copy of the heap for the child (sandbox: the seccomp filter the program installed "
		       "would stop the calls that make secret memory): fork() fails with ENOMEM");
		errno = ENOMEM;
		return -1;
	}
	sm_fork_reaped(1);
	pid_t pid = f();
	sm_fork_reaped(0);
	if (pid <= 0)
		return pid;
	size_t need;
	int err = sm_fork_last_error(&need);
	if (!err)
		return pid;
	/* the child ended in the library's handler (status 127); raw wait4:
	 * waitpid is a cancellation point, and a thread cancelled here would
	 * leave the child unreaped and fork() unexplained */
	int st, saved = errno;
	while (syscall(SYS_wait4, pid, &st, __WALL, NULL) < 0 && errno == EINTR)
		;
	errno = saved;
	say_failed(err, need);
	errno = ENOMEM;
	return -1;
}
