/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_opt_invalid - an invalid SECRETMEM_* value prints exactly one
 * warning line naming the variable and keeps the default; invalid values
 * through the API are -EINVAL.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

static int child_mode(void)
{
	/* use the allocator, fork policy in force is the default */
	void *p = secretmem_malloc(32);
	if (!p)
		return 2;
	secretmem_free(p);
	printf("fork=%ld reserve=%ld idle=%ld\n", secretmem_get_option(SECRETMEM_OPT_FORK),
	       secretmem_get_option(SECRETMEM_OPT_RESERVE), secretmem_get_option(SECRETMEM_OPT_RELEASE_IDLE));
	return 0;
}

static int count_lines(const char *out, const char *line)
{
	int n = 0;
	size_t len = strlen(line);

	for (const char *s = out; (s = strstr(s, line)); s += len)
		n++;
	return n;
}

static void one(const char *self, const char *var, const char *value, const char *expect_opts)
{
	static char out[8192];
	char env0[128], line[160];
	const char *env[] = { env0, NULL };

	snprintf(env0, sizeof(env0), "%s=%s", var, value);
	snprintf(line, sizeof(line), "secretmem: warning: invalid value of %s, using the default", var);
	int st = tl_run_self(self, "env", env, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s\n%s", env0, tl_status_str(st), out);
	TL_CHECK(tl_has_line(out, line), "%s: no warning line \"%s\"; output:\n%s", env0, line, out);
	TL_CHECK(count_lines(out, "warning") == 1, "%s: %d warnings, expected one:\n%s", env0,
		 count_lines(out, "warning"), out);
	TL_CHECK(tl_has_line(out, expect_opts), "%s: options in force not the defaults (\"%s\"):\n%s", env0,
		 expect_opts, out);
	printf("ok: %s -> warning, default kept\n", env0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "env") == 0)
		return child_mode();
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	one(argv[0], "SECRETMEM_FORK", "bogus", "fork=0 reserve=0 idle=0");
	one(argv[0], "SECRETMEM_FORK", "COPY!", "fork=0 reserve=0 idle=0");
	one(argv[0], "SECRETMEM_RESERVE", "12x", "fork=0 reserve=0 idle=0");
	one(argv[0], "SECRETMEM_RESERVE", "-1", "fork=0 reserve=0 idle=0");
	one(argv[0], "SECRETMEM_RELEASE_IDLE", "2", "fork=0 reserve=0 idle=0");

	/* valid values print nothing */
	static char out[8192];
	const char *ok[] = { "SECRETMEM_FORK=drop", "SECRETMEM_RESERVE=64k", "SECRETMEM_RELEASE_IDLE=1", NULL };
	int st = tl_run_self(argv[0], "env", ok, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "valid values: %s\n%s", tl_status_str(st), out);
	TL_CHECK(!strstr(out, "warning"), "valid values printed a warning:\n%s", out);
	TL_CHECK(tl_has_line(out, "fork=2 reserve=65536 idle=1"), "valid values not in force:\n%s", out);

	/* the API refuses bad values and unknown options */
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, 7) == -EINVAL, "set_option(FORK, 7)");
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_RELEASE_IDLE, 2) == -EINVAL, "set_option(RELEASE_IDLE, 2)");
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_RESERVE, -1) == -EINVAL, "set_option(RESERVE, -1)");
	TL_CHECK(secretmem_set_option(999, 0) == -EINVAL, "set_option(999)");
	TL_CHECK(secretmem_get_option(999) == -EINVAL, "get_option(999)");
	printf("ok: valid values silent, API refuses bad values\n");
	return TL_PASS;
}
