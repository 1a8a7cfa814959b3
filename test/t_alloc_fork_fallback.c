/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_fallback - the fork policies on the fallback backend (here:
 * memfd_secret refused by a seccomp filter before the library's first use),
 * as secretmem(7) describes them.  Fallback memory is private anonymous
 * memory, so under share as under copy the child gets a private
 * copy-on-write copy: it reads what the parent held at fork(), its writes
 * (to a small block, a large block, a region) never reach the parent, the
 * parent's later writes never reach it, and it may allocate and free.
 * Under copy the child's copy is locked again (VmFlags lo), with no
 * warning (a large block's guard page stopped mlock's fault-in).  Under
 * drop touching an old secret faults.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define NT 3

static unsigned char *target[NT];
static const size_t tlen[NT] = { 32, 60000, 8192 };

static int child(int policy, int from_parent)
{
	char c;

	for (int i = 0; i < NT; i++)
		if (!tl_check(target[i], tlen[i], 300 + (uint64_t)i))
			return 2; /* not what the parent held at fork() */
	if (read(from_parent, &c, 1) != 1)
		return 3;
	for (int i = 0; i < NT; i++)
		if (!tl_check(target[i], tlen[i], 300 + (uint64_t)i))
			return 4; /* the parent's write after fork() is here */
	if (policy == SECRETMEM_FORK_COPY && (tl_has_vmflag(target[2], "lo") != 1 || tl_has_vmflag(target[1], "lo") != 1))
		return 5;
	for (int i = 0; i < NT; i++)
		memset(target[i], 0x5a, tlen[i]);
	secretmem_free(target[0]);
	unsigned char *p = secretmem_malloc(32);
	if (!p)
		return 6;
	memset(p, 0x77, 32);
	secretmem_free(p);
	return 0;
}

static int touch(void *arg)
{
	tl_no_core();
	tl_signal_default(SIGSEGV);
	return *(volatile unsigned char *)arg == 0x11 ? 3 : 4;
}

static int run(void *arg)
{
	(void)arg;
	if (tl_seccomp_block(SYS_memfd_secret, ENOSYS) != 0) {
		printf("seccomp: %s\n", strerror(errno));
		return 2;
	}
	if (secretmem_default_backend() != SECRETMEM_BACKEND_FALLBACK) {
		printf("backend %s, want fallback\n", secretmem_backend_name(secretmem_default_backend()));
		return 2;
	}
	struct secretmem_region *r = secretmem_region_create(tlen[2], 0);
	target[0] = secretmem_malloc(tlen[0]);
	target[1] = secretmem_malloc(tlen[1]);
	if (!r || !target[0] || !target[1]) {
		printf("setup: %s\n", strerror(errno));
		return 2;
	}
	target[2] = secretmem_region_data(r);
	for (int policy = SECRETMEM_FORK_COPY; policy <= SECRETMEM_FORK_SHARE; policy++) {
		const char *name = policy == SECRETMEM_FORK_COPY ? "copy" : "share";
		int p2c[2], st;
		for (int i = 0; i < NT; i++)
			tl_fill(target[i], tlen[i], 300 + (uint64_t)i);
		if (secretmem_set_option(SECRETMEM_OPT_FORK, policy) || pipe(p2c))
			return 2;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			close(p2c[1]);
			tl_child_exit(child(policy, p2c[0]));
		}
		close(p2c[0]);
		for (int i = 0; i < NT; i++)
			tl_fill(target[i], tlen[i], 400 + (uint64_t)i);
		if (write(p2c[1], "x", 1) != 1)
			return 2;
		close(p2c[1]);
		waitpid(pid, &st, 0);
		for (int i = 0; i < NT; i++)
			if (!tl_check(target[i], tlen[i], 400 + (uint64_t)i)) {
				printf("fallback, %s: the child's write reached the parent's secret %d\n", name, i);
				return 3;
			}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("fallback, %s: child %s\n", name, tl_status_str(st));
			return 4;
		}
		printf("ok: fallback, %s: the child has a private copy\n", name);
	}
	if (secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_DROP))
		return 2;
	for (int i = 0; i < NT; i++) {
		int st = tl_run_child(touch, target[i], NULL, 0);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
			printf("fallback, drop: touching secret %d in the child: %s, want SIGSEGV\n", i, tl_status_str(st));
			return 5;
		}
	}
	printf("ok: fallback, drop: old secrets fault in the child\n");
	secretmem_free(target[0]);
	secretmem_free(target[1]);
	return secretmem_region_destroy(r) ? 6 : 0;
}

int main(void)
{
	static char out[8192];
	int st = tl_run_child(run, NULL, out, sizeof(out));

	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fallback fork policies: %s", tl_status_str(st));
	TL_CHECK(!strstr(out, "warning"), "a warning in a fork of fallback memory");
	return TL_PASS;
}
