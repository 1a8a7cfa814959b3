/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_transient - a transient failure is never a reason to use the
 * fallback backend.
 *
 * Secret memory works here, but at the library's first use the process
 *   (a) has no free file descriptor (RLIMIT_NOFILE = open fds), or
 *   (b) cannot create a process (a normal user at RLIMIT_NPROC), which the
 *       library needs for its memfd_secret call once the process has made
 *       a thread; once the thread is gone (the limit leaves room for the
 *       child again) new memory is secret; and in a process that never had
 *       a thread the call is made in-process and new memory is secret at
 *       the limit of one process.
 *   (c) meets a seccomp filter that answers memfd_secret with an errno that
 *       is neither a refusal (EPERM, ENOSYS) nor "no fd" (EINVAL, EBUSY):
 *       the creations fail with ENOMEM, never with that errno, before and
 *       after a first success.
 * Then: secretmem_region_create fails (EMFILE / ENOMEM), secretmem_malloc
 * fails (ENOMEM), no byte of fallback memory exists, the default backend
 * still says "secret"; once the condition is gone, new memory is secret.
 * Each case runs in a fresh child, so the library's first use is the one
 * under the condition.  The one-thread case (b) needs a process that never
 * had a thread: in a ThreadSanitizer build, whose fork children have a
 * thread of the runtime's, it runs in a re-executed copy of this program.
 * Without the in-process call it fails there too; and the two-thread case
 * fails in both builds when the library takes a failed clone for a refusal
 * (each seen on a scratch copy of syscall.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static int expect_no_fallback(int want_region_errno)
{
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	if (r) {
		printf("region_create worked, backend %s\n",
		       secretmem_backend_name(secretmem_region_backend(r)));
		return 10;
	}
	if (errno != want_region_errno) {
		printf("region_create: %s, want %s\n", strerror(errno), strerror(want_region_errno));
		return 11;
	}
	errno = 0;
	void *p = secretmem_malloc(64);
	if (p || errno != ENOMEM) {
		printf("malloc: %p %s\n", p, strerror(errno));
		return 12;
	}
	if (secretmem_default_backend() != SECRETMEM_BACKEND_SECRET) {
		printf("default backend %s during a transient failure\n",
		       secretmem_backend_name(secretmem_default_backend()));
		return 13;
	}
	struct secretmem_stats st;
	secretmem_stats(&st);
	if (st.fallback_bytes || st.secret_bytes) {
		printf("stats: secret %zu fallback %zu\n", st.secret_bytes, st.fallback_bytes);
		return 14;
	}
	return 0;
}

static int expect_secret_now(void)
{
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	char *p = secretmem_malloc(64);
	if (!r || !p) {
		printf("after the condition: region %p malloc %p: %s\n", (void *)r, (void *)p, strerror(errno));
		return 20;
	}
	if (secretmem_region_backend(r) != SECRETMEM_BACKEND_SECRET) {
		printf("after the condition: region backend %s\n",
		       secretmem_backend_name(secretmem_region_backend(r)));
		return 21;
	}
	char line[512];
	if (tl_maps_line(p, line, sizeof(line)) != 0 || !strstr(line, "secretmem")) {
		printf("after the condition: block not in secret memory: %s\n", line);
		return 22;
	}
	struct secretmem_stats st;
	secretmem_stats(&st);
	if (st.fallback_bytes) {
		printf("after the condition: %zu fallback bytes\n", st.fallback_bytes);
		return 23;
	}
	secretmem_free(p);
	secretmem_region_destroy(r);
	return 0;
}

static int case_nofile(void *arg)
{
	(void)arg;
	struct rlimit old, rl;
	getrlimit(RLIMIT_NOFILE, &old);
	/* the highest open fd + 1: every slot below it is taken */
	int top = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd + 1;
	rl.rlim_cur = (rlim_t)top;
	rl.rlim_max = old.rlim_max;
	for (int fd = 0; fd < top; fd++) /* fill holes */
		if (fcntl(fd, F_GETFD) < 0)
			dup2(0, fd);
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 2;
	int rc = expect_no_fallback(EMFILE);
	if (rc)
		return rc;
	if (setrlimit(RLIMIT_NOFILE, &old) != 0)
		return 3;
	return expect_secret_now();
}

/* The Threads: line of /proc/self/status; -1 if unreadable. */
static int threads_now(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *t = strstr(buf, "\nThreads:\t");
	return t ? atoi(t + 9) : -1;
}

/* Until /proc/self/status counts want threads (a joined thread may still be
 * exiting); 0, or -1 after two seconds. */
static int wait_threads(int want)
{
	for (int i = 0; i < 2000; i++) {
		if (threads_now() == want)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* A fork child of a ThreadSanitizer build starts with the runtime's own
 * thread, and the first pthread_create of any process of that build starts
 * it too; so the limits below are set from the threads counted, not assumed:
 * in other builds the counts are 1 and 2, as ever. */
static int case_nproc(void *arg)
{
	int lone = *(const int *)arg;
	/* a uid that owns no other process, limited to the threads it has:
	 * (lone) this one, or (not lone) these and one more thread of ours */
	uid_t id = (uid_t)(2000000000u + (unsigned)getpid() % 1000000u);
	if (setgid(id) != 0 || setuid(id) != 0)
		return 2;
	int before = threads_now();
	if (lone) {
		if (before != 1) {
			printf("%d threads in a process that never made one\n", before);
			return 6;
		}
		struct rlimit lim = { 1, 1 };
		if (setrlimit(RLIMIT_NPROC, &lim) != 0)
			return 3;
		return expect_secret_now();
	}
	pthread_t t;
	if (tl_idle_start(&t) != 0)
		return 4;
	int with = threads_now();
	if (with <= before) {
		printf("threads: %d before the idle thread, %d with it\n", before, with);
		return 7;
	}
	/* no room for one more task of this uid: the library's child */
	struct rlimit lim = { (rlim_t)with, (rlim_t)with };
	if (setrlimit(RLIMIT_NPROC, &lim) != 0)
		return 3;
	int rc = expect_no_fallback(ENOMEM);
	tl_idle_stop(t);
	if (rc)
		return rc;
	if (wait_threads(with - 1) != 0)
		return 5;
	return expect_secret_now();
}

static int case_odd_errno(void *arg)
{
	int err = *(const int *)arg;

	if (tl_seccomp_block(SYS_memfd_secret, err) != 0)
		return 2;
	return expect_no_fallback(ENOMEM);
}

/* After a first success: a region and a new large block fail with ENOMEM. */
static int case_odd_errno_later(void *arg)
{
	int err = *(const int *)arg;
	struct secretmem_region *first = secretmem_region_create(4096, 0);

	if (!first)
		return 30;
	if (tl_seccomp_block(SYS_memfd_secret, err) != 0)
		return 2;
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(4096, 0);
	if (r || errno != ENOMEM) {
		printf("region_create after a success: %p %s\n", (void *)r, strerror(errno));
		return 31;
	}
	struct secretmem_stats st;
	secretmem_stats(&st);
	if (st.fallback_bytes) {
		printf("after a success: %zu fallback bytes\n", st.fallback_bytes);
		return 32;
	}
	secretmem_region_destroy(first);
	return 0;
}

int main(int argc, char **argv)
{
	char out[4096];
	int st;

	if (argc == 2 && strcmp(argv[1], "nproc-lone") == 0) {
		static int one = 1; /* re-run below: a process that never had a thread */
		return case_nproc(&one);
	}

	/* not tl_need_secretmem(): the library's probe result would be
	 * inherited by the children, whose first use must be the one under the
	 * condition */
	long fd = syscall(SYS_memfd_secret, 0);
	if (fd < 0)
		tl_skip_kernel("memfd_secret not usable here");
	close((int)fd);
	st = tl_run_child(case_nofile, NULL, out, sizeof(out));
	printf("no free fd at first use: %s\n%s", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "no free fd at first use: %s", tl_status_str(st));
	static int odd[] = { EINVAL, EBUSY };
	for (int i = 0; i < 2; i++) {
		st = tl_run_child(case_odd_errno, &odd[i], out, sizeof(out));
		printf("filter answers %s at first use: %s\n%s", strerror(odd[i]), tl_status_str(st), out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "filter errno %d at first use: %s", odd[i],
			 tl_status_str(st));
		st = tl_run_child(case_odd_errno_later, &odd[i], out, sizeof(out));
		printf("filter answers %s after a success: %s\n%s", strerror(odd[i]), tl_status_str(st), out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "filter errno %d after a success: %s", odd[i],
			 tl_status_str(st));
	}
	if (geteuid() == 0) {
		static int lone[] = { 0, 1 };
		/* one thread: a fork child of a ThreadSanitizer build has the
		 * runtime's thread too, a fresh process has not */
		int forked_threads = tl_fork_child_threads();
		TL_CHECK(forked_threads >= 1, "cannot count a fork child's threads");
		for (int i = 0; i < 2; i++) {
			if (lone[i] && forked_threads > 1) {
				printf("a fork child has %d threads here (a sanitizer's): the one-thread case runs in "
				       "a fresh process\n",
				       forked_threads);
				st = tl_run_self("/proc/self/exe", "nproc-lone", NULL, out, sizeof(out));
			} else {
				st = tl_run_child(case_nproc, &lone[i], out, sizeof(out));
			}
			printf("RLIMIT_NPROC reached at first use, %s: %s\n%s",
			       lone[i] ? "one thread (in-process call)" : "two threads", tl_status_str(st), out);
			TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "RLIMIT_NPROC at first use, %s: %s",
				 lone[i] ? "one thread" : "two threads", tl_status_str(st));
		}
	} else {
		printf("RLIMIT_NPROC case: needs root (to become a user of its own)\n");
	}
	return 0;
}
