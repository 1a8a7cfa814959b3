/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_usage.c - usage errors exit 64 with a usage text on stderr (also an
 * argument after --help or --version, and --case without a name);
 * --version prints SECRETMEM_VERSION_STRING; --help and `help` exit 0;
 * output that cannot be written (/dev/full) exits 74.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "secretmem.h"
#include "cli_run.h"

static void expect(char **args, int code, const char *text, const char *what)
{
	static char out[65536];
	int st = run_cli(args, out, sizeof(out), 1, NULL);

	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code, "%s: %s, expected exit %d\n%s", what,
		 tl_status_str(st), code, out);
	if (text)
		TL_CHECK(strstr(out, text) != NULL, "%s: output lacks '%s':\n%s", what, text, out);
	printf("%s: exit %d ok\n", what, code);
}

int main(void)
{
	char *none[] = { NULL, NULL };
	char *unknown[] = { NULL, "frobnicate", NULL };
	char *bad_check[] = { NULL, "check", "--bogus", NULL };
	char *bad_status[] = { NULL, "status", "extra", NULL };
	char *bad_opt[] = { NULL, "--bogus", NULL };
	char *version[] = { NULL, "--version", NULL };
	char *help[] = { NULL, "--help", NULL };
	char *help_cmd[] = { NULL, "help", NULL };
	char *check_help[] = { NULL, "check", "--help", NULL };
	char *status_help[] = { NULL, "status", "--help", NULL };
	char want[64];

	expect(none, 64, "usage: secretmem", "no command");
	expect(unknown, 64, "unknown command", "unknown command");
	expect(bad_opt, 64, "usage: secretmem", "unknown option");
	expect(bad_check, 64, "usage: secretmem check", "check --bogus");
	expect(bad_status, 64, "usage: secretmem status", "status extra");
	snprintf(want, sizeof(want), "secretmem %s\n", SECRETMEM_VERSION_STRING);
	expect(version, 0, want, "--version");
	expect(help, 0, "status [--json]", "--help");
	expect(help_cmd, 0, "check [--json]", "help");
	expect(check_help, 0, "usage: secretmem check", "check --help");
	expect(status_help, 0, "usage: secretmem status", "status --help");
	/* an argument after --help or --version is a usage error too */
	char *help_extra[] = { NULL, "--help", "extra", NULL };
	char *help_cmd_extra[] = { NULL, "help", "extra", NULL };
	char *version_bogus[] = { NULL, "--version", "--bogus", NULL };
	char *case_noname[] = { NULL, "check", "--case", NULL };
	expect(help_extra, 64, "unexpected argument 'extra'", "--help extra");
	expect(help_cmd_extra, 64, "unexpected argument 'extra'", "help extra");
	expect(version_bogus, 64, "unexpected argument '--bogus'", "--version --bogus");
	expect(case_noname, 64, "--case needs a case name", "check --case");

	/* output that cannot be written (a full disk): exit 74, never 0 */
	static const char *const full[] = { "--version", "status", "status --json", "check --case flags" };
	char cmd[PATH_MAX + 100], tool[PATH_MAX];
	TL_CHECK(realpath(tl_build_path("secretmem"), tool), "the secretmem tool is not built");
	for (size_t i = 0; i < sizeof(full) / sizeof(full[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' %s > /dev/full 2>/dev/null", tool, full[i]);
		int st = system(cmd);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 74, "secretmem %s > /dev/full: %s, expected exit 74",
			 full[i], tl_status_str(st));
		printf("secretmem %s > /dev/full: exit 74 ok\n", full[i]);
	}
	return TL_PASS;
}
