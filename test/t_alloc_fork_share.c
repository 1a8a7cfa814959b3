/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_share - fork policy "share" (documented semantics): parent and
 * child share the secret pages, so the child's write is visible to the
 * parent.  Set through the API, and through SECRETMEM_FORK=share in a fresh
 * process.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static int shared_write(void)
{
	unsigned char *s = secretmem_malloc(32), *big = secretmem_malloc(50000);
	int st;

	TL_CHECK(s && big, "malloc: %s", strerror(errno));
	tl_fill(s, 32, 5);
	tl_fill(big, 50000, 6);
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		/* the child only writes: allocating would share slots too */
		if (!tl_check(s, 32, 5) || !tl_check(big, 50000, 6))
			_exit(2);
		memset(s, 0x5a, 32);
		memset(big + 40000, 0x5a, 100);
		_exit(0);
	}
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s", tl_status_str(st));
	for (int i = 0; i < 32; i++)
		TL_CHECK(s[i] == 0x5a, "share: the child's write to a small block is not visible in the parent");
	for (int i = 0; i < 100; i++)
		TL_CHECK(big[40000 + i] == 0x5a, "share: the child's write to a large block is not visible in the parent");
	TL_CHECK(tl_check(big, 40000, 6), "share: the rest of the large block changed");
	secretmem_free(s);
	secretmem_free(big);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "env") == 0) {
		TL_CHECK(secretmem_get_option(SECRETMEM_OPT_FORK) == SECRETMEM_FORK_SHARE,
			 "SECRETMEM_FORK=share: policy %ld", secretmem_get_option(SECRETMEM_OPT_FORK));
		return shared_write();
	}
	tl_need_secretmem();
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_SHARE) == 0, "set_option(FORK, share)");
	TL_CHECK(secretmem_get_option(SECRETMEM_OPT_FORK) == SECRETMEM_FORK_SHARE, "get_option(FORK)");
	shared_write();
	printf("ok: share through the API\n");

	static char out[8192];
	const char *env[] = { "SECRETMEM_FORK=share", NULL };
	int st = tl_run_self(argv[0], "env", env, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_FORK=share run: %s\n%s", tl_status_str(st), out);
	TL_CHECK(!strstr(out, "warning"), "SECRETMEM_FORK=share printed a warning:\n%s", out);
	printf("ok: share through SECRETMEM_FORK=share\n");
	return TL_PASS;
}
