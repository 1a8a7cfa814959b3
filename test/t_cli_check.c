/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_check.c - `secretmem check` on a machine with memfd_secret: exit 0,
 * verdict "usable", 0 failed cases, every case (at least 25) listed as PASS,
 * INFO or SKIP; `check --json` parses and has every documented key
 * (test/cli_json.py); `--case` runs only the named cases.
 */
#include <stdio.h>
#include <string.h>
#include "secretmem.h"
#include "cli_run.h"

static const char *const case_names[] = {
	"flags", "fd", "size", "mmap", "locking", "memlock", "memlock-selftest", "memlock-touch",
	"proc-mem", "process-vm-readv", "ptrace", "reopen", "pidfd-getfd", "no-fd", "o-direct",
	"vmsplice", "vmsplice-remap", "io-uring", "userfaultfd", "mremap", "madvise", "pagemap",
	"memcg", "write", "coredump", "fork", "exec", "hibernation",
};

int main(void)
{
	static char out[65536];
	char *args[] = { NULL, "check", NULL, NULL };
	int st;

	/* asks the CLI itself (it runs natively even when this test runs
	 * under valgrind, which lacks the system call) */
	st = run_cli(args, out, sizeof(out), 0, NULL);
	printf("%s", out);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2) {
		char *nl = strchr(out, '\n');
		if (nl)
			*nl = '\0';
		tl_skip_kernel(out);
	}
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "check: %s, expected exit 0", tl_status_str(st));
	TL_CHECK(strncmp(out, "verdict: usable", 15) == 0, "the verdict is not the first line");
	TL_CHECK(strstr(out, " 0 failed,") != NULL, "the result line does not say 0 failed");
	for (size_t i = 0; i < sizeof(case_names) / sizeof(case_names[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n%-17s PASS", case_names[i]);
		if (strstr(out, line))
			continue;
		snprintf(line, sizeof(line), "\n%-17s INFO", case_names[i]);
		if (strstr(out, line))
			continue;
		snprintf(line, sizeof(line), "\n%-17s SKIP", case_names[i]);
		TL_CHECK(strstr(out, line) != NULL, "case %s is neither PASS, INFO nor SKIP",
			 case_names[i]);
	}
	/* the cases that every machine with memfd_secret can run must pass */
	static const char *const must_pass[] = { "flags", "fd", "size", "mmap", "locking",
						 "vmsplice", "vmsplice-remap", "mremap", "madvise",
						 "no-fd", "write", "fork" };
	for (size_t i = 0; i < sizeof(must_pass) / sizeof(must_pass[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n%-17s PASS", must_pass[i]);
		TL_CHECK(strstr(out, line) != NULL, "case %s did not pass", must_pass[i]);
	}
	static const char *const env_lines[] = { "kernel release", "architecture", "secretmem.enable",
						 "seccomp mode", "RLIMIT_MEMLOCK", "CAP_IPC_LOCK",
						 "memory-lock regime", "hibernation", "DirectMap4k/2M/1G" };
	for (size_t i = 0; i < sizeof(env_lines) / sizeof(env_lines[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n  %s", env_lines[i]);
		TL_CHECK(strstr(out, line) != NULL, "environment lacks %s", env_lines[i]);
	}

	args[2] = "--json";
	st = run_cli(args, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "check --json: %s", tl_status_str(st));
	char *file = save_tmp(out);
	char *py[] = { "python3", "test/cli_json.py", "check", file, "usable", NULL };
	int ok = json_ok(py);
	unlink(file);
	TL_CHECK(ok, "check --json output rejected:\n%s", out);
	TL_CHECK(strstr(out, "\"failed\": 0") != NULL, "JSON summary does not say 0 failed");
	TL_CHECK(strstr(out, "\"exit_status\": 0") != NULL, "JSON exit_status is not 0");
	TL_CHECK(sizeof(case_names) / sizeof(case_names[0]) >= 25, "fewer than 25 cases");

	char *sel[] = { NULL, "check", "--json", "--case", "vmsplice-remap", "--case", "no-fd", NULL };
	st = run_cli(sel, out, sizeof(out), 0, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "check --case: %s", tl_status_str(st));
	file = save_tmp(out);
	char *py2[] = { "python3", "test/cli_json.py", "check", file, "usable", "subset", NULL };
	ok = json_ok(py2);
	unlink(file);
	TL_CHECK(ok, "check --case output rejected:\n%s", out);
	TL_CHECK(strstr(out, "\"passed\": 2") != NULL, "check --case did not run just the 2 cases");
	char *badsel[] = { NULL, "check", "--case", "no-such-case", NULL };
	st = run_cli(badsel, out, sizeof(out), 1, NULL);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 64, "check --case no-such-case: %s",
		 tl_status_str(st));
	printf("check: exit 0, 0 failed, JSON valid, --case selects\n");
	return TL_PASS;
}
