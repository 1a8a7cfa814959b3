/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_opt_invalid - an invalid SECRETMEM_* value prints exactly one
 * warning line naming the variable and listing the valid values; it keeps
 * the default, except SECRETMEM_REQUIRE (a protecting switch), where it
 * takes the safe side, 1.  Switches accept 1/0, yes/no, true/false, on/off
 * in any case.  Invalid values through the API are -EINVAL.
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include "secretmem.h"
#include "tlib.h"

static int child_mode(void)
{
	/* use the allocator, fork policy in force is the default; with
	 * REQUIRE in force and no secret memory, malloc may fail */
	void *p = secretmem_malloc(32);
	if (!p && secretmem_get_option(SECRETMEM_OPT_REQUIRE) != 1)
		return 2;
	secretmem_free(p);
	printf("fork=%ld reserve=%ld idle=%ld\n", secretmem_get_option(SECRETMEM_OPT_FORK),
	       secretmem_get_option(SECRETMEM_OPT_RESERVE), secretmem_get_option(SECRETMEM_OPT_RELEASE_IDLE));
	printf("require=%ld\n", secretmem_get_option(SECRETMEM_OPT_REQUIRE));
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

#define SWITCHES "(valid: 1, 0, yes, no, true, false, on, off)"

static void one(const char *self, const char *var, const char *value, const char *expect_opts,
		const char *tail)
{
	static char out[8192];
	char env0[128], line[256];
	const char *env[] = { env0, NULL };

	snprintf(env0, sizeof(env0), "%s=%s", var, value);
	snprintf(line, sizeof(line), "secretmem: warning: invalid value of %s %s", var, tail);
	int st = tl_run_self(self, "env", env, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s\n%s", env0, tl_status_str(st), out);
	TL_CHECK(tl_has_line(out, line), "%s: no warning line \"%s\"; output:\n%s", env0, line, out);
	TL_CHECK(count_lines(out, "warning") == 1, "%s: %d warnings, expected one:\n%s", env0,
		 count_lines(out, "warning"), out);
	TL_CHECK(tl_has_line(out, expect_opts), "%s: options in force not the defaults (\"%s\"):\n%s", env0,
		 expect_opts, out);
	printf("ok: %s -> warning \"%s\"\n", env0, line);
}

/* A valid spelling: no warning, and the line shows the value in force. */
static void good(const char *self, const char *var, const char *value, const char *expect)
{
	static char out[8192];
	char env0[128];
	const char *env[] = { env0, NULL };

	snprintf(env0, sizeof(env0), "%s=%s", var, value);
	int st = tl_run_self(self, "env", env, out, sizeof(out));
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s\n%s", env0, tl_status_str(st), out);
	TL_CHECK(!strstr(out, "warning"), "%s printed a warning:\n%s", env0, out);
	TL_CHECK(tl_has_line(out, expect), "%s: \"%s\" not in force:\n%s", env0, expect, out);
	printf("ok: %s -> %s\n", env0, expect);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "env") == 0)
		return child_mode();
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	const char *fork_tail = "(valid: copy, share, drop), using the default copy";
	const char *size_tail = "(valid: a byte count with an optional k, m or g suffix), using the default 0";
	one(argv[0], "SECRETMEM_FORK", "bogus", "fork=0 reserve=0 idle=0", fork_tail);
	one(argv[0], "SECRETMEM_FORK", "COPY!", "fork=0 reserve=0 idle=0", fork_tail);
	one(argv[0], "SECRETMEM_FORK", "shared", "fork=0 reserve=0 idle=0", fork_tail);
	one(argv[0], "SECRETMEM_RESERVE", "12x", "fork=0 reserve=0 idle=0", size_tail);
	one(argv[0], "SECRETMEM_RESERVE", "-1", "fork=0 reserve=0 idle=0", size_tail);
	one(argv[0], "SECRETMEM_RELEASE_IDLE", "2", "fork=0 reserve=0 idle=0", SWITCHES ", using the default 0");
	/* the protecting switch: a typo takes the safe side */
	const char *req_tail = SWITCHES ", using 1, the safe side: no fallback memory";
	one(argv[0], "SECRETMEM_REQUIRE", "2", "require=1", req_tail);
	one(argv[0], "SECRETMEM_REQUIRE", "yess", "require=1", req_tail);
	one(argv[0], "SECRETMEM_REQUIRE", "enabled", "require=1", req_tail);

	/* the usual spellings of a switch */
	static const char *const on[] = { "1", "yes", "YES", "true", "True", "on", "ON" };
	static const char *const off[] = { "0", "no", "No", "false", "FALSE", "off", "Off" };
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		good(argv[0], "SECRETMEM_REQUIRE", on[i], "require=1");
		good(argv[0], "SECRETMEM_REQUIRE", off[i], "require=0");
	}
	good(argv[0], "SECRETMEM_RELEASE_IDLE", "yes", "fork=0 reserve=0 idle=1");
	good(argv[0], "SECRETMEM_RELEASE_IDLE", "off", "fork=0 reserve=0 idle=0");
	good(argv[0], "SECRETMEM_FORK", "Drop", "fork=2 reserve=0 idle=0");

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
