/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_proc.c - `secretmem status` where /proc shows nothing: an
 * empty tmpfs over /proc (a chroot or container without /proc mounted),
 * and a proc mount of a PID namespace that no longer has a process (this
 * process is not in it).  Each is "/proc cannot be read" (secretmem(1)):
 * exit 71 with a message that says why, also with --quiet and --json,
 * never a scan of 0 processes called complete (it was: --quiet exited 0).
 * Runs as root (mount namespaces); skips otherwise.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include "cli_run.h"

/* run_cli's child: /proc of its own mount namespace is an empty tmpfs. */
static int empty_proc(void)
{
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 99;
	if (mount("none", "/proc", "tmpfs", 0, NULL) != 0)
		return 98;
	return 0;
}

/* run_cli's child: /proc is the proc mount of a PID namespace whose only
 * process (its init, which mounted it) has exited. */
static int foreign_proc(void)
{
	int st;

	if (unshare(CLONE_NEWNS | CLONE_NEWPID) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return 99;
	pid_t init = fork(); /* pid 1 of the new namespace, in our mount namespace */
	if (init < 0)
		return 97;
	if (init == 0)
		_exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0);
	if (waitpid(init, &st, 0) != init || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 98;
	return 0;
}

static void expect_71(int (*pre)(void), const char *what, const char *why)
{
	static char out[1 << 16];
	char *text[] = { NULL, "status", NULL };
	char *quiet[] = { NULL, "status", "--quiet", NULL };
	char *json[] = { NULL, "status", "--json", NULL };
	char **runs[] = { text, quiet, json };

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		int st = run_cli(runs[i], out, sizeof(out), 1, pre);
		printf("%s, status %s: %s\n%s", what, runs[i][2] ? runs[i][2] : "", tl_status_str(st), out);
		if (WIFEXITED(st) && WEXITSTATUS(st) >= 97 && WEXITSTATUS(st) <= 99)
			tl_skip("cannot make a mount or PID namespace here");
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 71, "%s: status %s exited %s, want 71", what,
			 runs[i][2] ? runs[i][2] : "", tl_status_str(st));
		TL_CHECK(strstr(out, why) != NULL, "%s: no '%s' in the message", what, why);
	}
}

int main(void)
{
	if (geteuid() != 0)
		tl_skip("needs root (mount namespaces)");
#ifdef TL_SANITIZED
	/* the sanitizer runtime reads its options and, at exit, the threads
	 * from /proc: without it, LeakSanitizer's fatal error ends the tool */
	tl_skip("a sanitizer build: its runtime needs /proc");
#endif
	expect_71(empty_proc, "an empty tmpfs over /proc",
		  "secretmem status: cannot scan /proc: /proc is not a proc file system");
	expect_71(foreign_proc, "the proc of another PID namespace",
		  "secretmem status: cannot scan /proc: /proc does not show this process");
	return TL_PASS;
}
