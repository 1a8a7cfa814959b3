/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_opt_reserve - SECRETMEM_RESERVE=1m faults 1 MiB at first use, after
 * which 1,000 small allocations fault no page; the same through
 * secretmem_set_option before first use; RESERVE is frozen once in use.
 * As uid 65534 under a 64 KiB memory-lock limit, SECRETMEM_RESERVE=64k
 * leaves fork()'s room free (a warning says the reserve is not all
 * there): a child gets its copy of a secret.  SECRETMEM_RESERVE=1024g,
 * more than the machine has, is refused whole with the warning (it was
 * faulted in chunk by chunk until the out-of-memory killer came).
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static void *blk[1000];

static int reserve_checks(size_t bytes)
{
	struct secretmem_stats s0, s1, s2;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	TL_CHECK(secretmem_get_option(SECRETMEM_OPT_RESERVE) == (long)bytes, "get_option(RESERVE) = %ld, expected %zu",
		 secretmem_get_option(SECRETMEM_OPT_RESERVE), bytes);
	TL_CHECK(secretmem_stats(&s0) == 0, "stats");
	void *first = secretmem_malloc(32);
	TL_CHECK(first, "first malloc: %s", strerror(errno));
	TL_CHECK(secretmem_stats(&s1) == 0, "stats");
	printf("reserve %zu: before first use %zu pages faulted, after the first malloc %zu\n", bytes,
	       s0.pages_faulted, s1.pages_faulted);
	TL_CHECK(s1.pages_faulted >= bytes / ps, "RESERVE=%zu: only %zu pages faulted after the first malloc", bytes,
		 s1.pages_faulted);
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_RESERVE, 0) == -EBUSY, "set_option(RESERVE) in use: not EBUSY");
	/* 1,000 small blocks of mixed classes (under 512 KiB in all) */
	for (int i = 0; i < 1000; i++) {
		size_t n = 16 + (size_t)(i * 131) % 497;
		blk[i] = secretmem_malloc(n);
		TL_CHECK(blk[i], "malloc(%zu): %s", n, strerror(errno));
		memset(blk[i], 0x33, n);
	}
	TL_CHECK(secretmem_stats(&s2) == 0, "stats");
	TL_CHECK(s2.pages_faulted == s1.pages_faulted,
		 "RESERVE=%zu: 1000 small allocations faulted %zu more pages", bytes, s2.pages_faulted - s1.pages_faulted);
	for (int i = 0; i < 1000; i++)
		secretmem_free(blk[i]);
	secretmem_free(first);
	printf("ok: reserve %zu: %zu pages faulted at first use, none after 1000 allocations\n", bytes,
	       s1.pages_faulted);
	return 0;
}

static int api_child(void *arg)
{
	(void)arg;
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_RESERVE, 512 << 10) == 0, "set_option(RESERVE, 512k)");
	return reserve_checks(512 << 10);
}

/* Without a reserve the first malloc faults only what it needs. */
static int no_reserve_child(void *arg)
{
	struct secretmem_stats s;
	(void)arg;
	void *p = secretmem_malloc(32);
	TL_CHECK(p && secretmem_stats(&s) == 0, "malloc");
	printf("no reserve: %zu pages faulted after the first malloc\n", s.pages_faulted);
	TL_CHECK(s.pages_faulted < 256, "no reserve: the first malloc faulted %zu pages", s.pages_faulted);
	secretmem_free(p);
	return 0;
}

/* The whole limit asked for: fork still copies. */
static int limit_fork(void)
{
	char *p = secretmem_malloc(32);

	TL_CHECK(p, "malloc: %s", strerror(errno));
	memcpy(p, "FORKED-SECRET", 14);
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		tl_child_exit(memcmp(p, "FORKED-SECRET", 14) == 0 ? 0 : 3);
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child did not get its copy: %s", tl_status_str(st));
	secretmem_free(p);
	printf("ok: the child got its copy of the secret\n");
	return 0;
}

int main(int argc, char **argv)
{
	static char out[8192];

	if (argc > 1 && strcmp(argv[1], "env") == 0)
		return reserve_checks(1 << 20);
	if (argc > 1 && strcmp(argv[1], "limit") == 0)
		return limit_fork();
	if (argc > 1 && strcmp(argv[1], "huge") == 0) {
		void *p = secretmem_malloc(32);
		secretmem_free(p);
		return p ? 0 : 1;
	}
	tl_need_secretmem();

	const char *env[] = { "SECRETMEM_RESERVE=1m", NULL };
	int st = tl_run_self(argv[0], "env", env, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_RESERVE=1m: %s", tl_status_str(st));
	TL_CHECK(!strstr(out, "warning"), "SECRETMEM_RESERVE=1m printed a warning");

	/* more than the machine has (root has no memory-lock limit): the
	 * warning, not the out-of-memory killer */
	const char *envhuge[] = { "SECRETMEM_RESERVE=1024g", NULL };
	st = tl_run_self(argv[0], "huge", envhuge, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_RESERVE=1024g: %s", tl_status_str(st));
	TL_CHECK(strstr(out, "SECRETMEM_RESERVE: could not fault in the reserve"),
		 "SECRETMEM_RESERVE=1024g: no warning that the reserve is not all there");

	const char *env64[] = { "SECRETMEM_RESERVE=64k", NULL };
	st = tl_run_self_user(argv[0], "limit", env64, 64 << 10, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("(the limit case needs another user: skipped)\n");
	} else {
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_RESERVE=64k under a 64 KiB limit: %s",
			 tl_status_str(st));
		TL_CHECK(strstr(out, "SECRETMEM_RESERVE: could not fault in the reserve"),
			 "SECRETMEM_RESERVE=64k under a 64 KiB limit: no warning that the reserve is not all there");
		TL_CHECK(!strstr(out, "could not copy"), "fork could not copy");
	}

	st = tl_run_child(api_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "set_option(RESERVE): %s", tl_status_str(st));
	st = tl_run_child(no_reserve_child, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "no reserve: %s", tl_status_str(st));
	return TL_PASS;
}
