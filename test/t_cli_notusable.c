/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_notusable.c - `secretmem check` where a seccomp filter refuses
 * memfd_secret: ENOSYS, EPERM, and a filter that kills the caller.  The
 * verdict is "not usable" with the reason, every case is SKIP, the exit
 * status is 2, and the tool itself survives the killing filter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include "secretmem.h"
#include "cli_run.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static int block_err, require;

static int pre_filter(void)
{
	if (require)
		setenv("SECRETMEM_REQUIRE", "1", 1);
	int rc = tl_seccomp_block(SYS_memfd_secret, block_err);
	if (rc < 0) {
		fprintf(stderr, "seccomp: %s\n", strerror(-rc));
		return 3;
	}
	return 0;
}

static void expect_not_usable(int err, const char *name, const char *text)
{
	static char out[65536];
	char *args[] = { NULL, "check", NULL, NULL };
	int st;

	block_err = err;
	st = run_cli(args, out, sizeof(out), 0, pre_filter);
	printf("--- filter %s ---\n%s", name, out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "filter %s: %s, expected exit 2", name,
		 tl_status_str(st));
	TL_CHECK(strncmp(out, "verdict: not usable", 19) == 0, "filter %s: verdict line wrong", name);
	char *nl = strchr(out, '\n');
	TL_CHECK(nl != NULL, "no newline");
	*nl = '\0';
	TL_CHECK(strstr(out, name) || (text && strstr(out, text)),
		 "filter %s: the verdict does not give the reason: %s", name, out);
	*nl = '\n';
	TL_CHECK(strstr(out, " 0 passed, 0 failed, 28 skipped, 0 info") != NULL,
		 "filter %s: the cases were not all skipped", name);
	TL_CHECK(strstr(out, "\nfallback: ") != NULL, "filter %s: no fallback line", name);

	args[2] = "--json";
	st = run_cli(args, out, sizeof(out), 0, pre_filter);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "filter %s, --json: %s", name, tl_status_str(st));
	char *file = save_tmp(out);
	char *py[] = { "python3", "test/cli_json.py", "check", file, "not usable", NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "filter %s: JSON rejected:\n%s", name, out);
	char want[64];
	snprintf(want, sizeof(want), "\"error\": \"%s\"", name);
	TL_CHECK(strstr(out, want) != NULL, "filter %s: JSON lacks %s", name, want);
	TL_CHECK(strstr(out, "\"exit_status\": 2") != NULL, "filter %s: JSON exit_status", name);
}

int main(void)
{
	static char out[65536];
	char *args[] = { NULL, "check", NULL };
	int st;

	expect_not_usable(ENOSYS, "ENOSYS", "Function not implemented");
	expect_not_usable(EPERM, "EPERM", "Operation not permitted");

	/* with SECRETMEM_REQUIRE=1 the library will not fall back: said so */
	require = 1;
	expect_not_usable(ENOSYS, "ENOSYS", NULL);
	char *jargs[] = { NULL, "check", "--json", NULL };
	st = run_cli(jargs, out, sizeof(out), 0, pre_filter);
	TL_CHECK(strstr(out, "\"backend\": \"none\"") && strstr(out, "\"fallback\": false"),
		 "SECRETMEM_REQUIRE=1: JSON does not say backend none, no fallback:\n%s", out);
	require = 0;

	/* SECCOMP_RET_KILL_PROCESS: the tool must not die (it probes in a child) */
	block_err = 0;
	st = run_cli(args, out, sizeof(out), 0, pre_filter);
	printf("--- killing filter ---\n%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2, "killing filter: %s, expected exit 2",
		 tl_status_str(st));
	TL_CHECK(strncmp(out, "verdict: not usable", 19) == 0, "killing filter: verdict wrong");
	return TL_PASS;
}
