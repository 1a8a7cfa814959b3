/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * `secretmem exec`: finds the module next to the secretmem binary, puts it
 * in front of LD_PRELOAD, sets SECRETMEM_OPENSSL and replaces itself with
 * the program (same pid, arguments passed through); usage errors exit 64, a
 * missing program 127, a program that cannot be executed 126.  And a real
 * use: `openssl s_server` started by `secretmem exec --mode all` is the
 * process the tool was (exec, not fork) and holds secret memory.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

static char tool[PATH_MAX];

/*
 * With a sanitizer-built module the program must tolerate the sanitizer runtime
 * arriving late in LD_PRELOAD (the tool puts the module first); sh does.
 */
static int tool_run(const char *args, const char *out)
{
	return rig_sh("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 '%s' exec %s > '%s' 2>&1",
		      tool, args, out);
}

int main(void)
{
	char out[300], want[PATH_MAX + 64], args[PATH_MAX + 200];
	const char *dir;

	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	const char *preload = rig_preload();
	dir = rig_tmpdir();
	snprintf(out, sizeof(out), "%s/exec.out", dir);

	/* Environment and argument passing. */
	TL_CHECK(tool_run("-- sh -c 'echo \"[$LD_PRELOAD] [$SECRETMEM_OPENSSL] [$1]\"' zero 'one two'", out) == 0,
		 "exec of sh failed");
	rig_cat(out);
	snprintf(want, sizeof(want), "[%s] [secure] [one two]", preload);
	TL_CHECK(rig_file_has(out, want), "want %s", want);
	/* Mode option, an LD_PRELOAD already set is kept behind ours. */
	snprintf(args, sizeof(args), "--mode all -- sh -c 'echo \"[$LD_PRELOAD] [$SECRETMEM_OPENSSL]\"'");
	TL_CHECK(rig_sh("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 LD_PRELOAD=/nonexistent-first.so "
			"'%s' exec %s > '%s' 2>&1", tool, args, out) == 0, "exec --mode all failed");
	rig_cat(out);
	snprintf(want, sizeof(want), "[%s:/nonexistent-first.so] [all]", preload);
	TL_CHECK(rig_file_has(out, want), "want %s", want);
	TL_CHECK(tool_run("--mode=off sh -c 'echo \"[$SECRETMEM_OPENSSL]\"'", out) == 0 &&
		 rig_file_has(out, "[off]"), "--mode=off without --");
	/* Exit status of sh is passed through (it is the same process). */
	TL_CHECK(tool_run("-- sh -c 'exit 7'", out) == 7, "exit status not passed through");

	/* Errors. */
	TL_CHECK(tool_run("", out) == 64 && rig_file_has(out, "no program"), "no program: want 64");
	TL_CHECK(tool_run("--mode bogus -- true", out) == 64 && rig_file_has(out, "invalid mode"),
		 "invalid mode: want 64");
	TL_CHECK(tool_run("--mode", out) == 64, "--mode without value: want 64");
	TL_CHECK(tool_run("--frobnicate -- true", out) == 64, "unknown option: want 64");
	TL_CHECK(tool_run("-- /nonexistent/program", out) == 127 && rig_file_has(out, "/nonexistent/program"),
		 "missing program: want 127");
	/* a PATH of directories this user can search (a directory it cannot,
	 * such as root's own in an ordinary user's PATH, makes it 126, as in
	 * the shell) */
	TL_CHECK(rig_sh("PATH=/usr/bin:/bin '%s' exec -- no-such-program-secretmem-test > '%s' 2>&1", tool, out) == 127,
		 "program not in PATH: want 127");
	snprintf(args, sizeof(args), "-- '%s'", out); /* a file without x bit */
	TL_CHECK(rig_sh("'%s' exec %s > '%s.2' 2>&1", tool, args, out) == 126, "not executable: want 126");
	TL_CHECK(tool_run("--help", out) == 0 && rig_file_has(out, "usage: secretmem exec"), "--help");

	/* A real server through the tool: same pid, OpenSSL memory is secret. */
	if (rig_preload_sanitizer()) {
		printf("module built with a sanitizer: it cannot lead LD_PRELOAD, real program not run\n");
		return 0;
	}
	tl_need_secretmem();
	rig_need("openssl");
	char accept[64], log[300];
	int port = rig_free_port();
	snprintf(accept, sizeof(accept), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/s_server.log", dir);
	rig_make_key("ed25519");
	char *argv[] = { tool, "exec", "--mode", "all", "--", "openssl", "s_server", "-www", "-accept", accept,
			 "-key", (char *)(uintptr_t)rig_make_key("ed25519"), "-cert",
			 (char *)(uintptr_t)rig_cert("ed25519"), NULL };
	pid_t pid = rig_spawn(argv, NULL, log, dir, 0);
	TL_CHECK(rig_wait_port(port, pid, 10000) == 0, "s_server under secretmem exec did not start");
	TL_CHECK(rig_s_client(port, log) == 0, "handshake failed");
	snprintf(args, sizeof(args), "/proc/%d/exe", (int)pid);
	char exe[PATH_MAX];
	ssize_t n = readlink(args, exe, sizeof(exe) - 1);
	TL_CHECK(n > 0, "readlink %s", args);
	exe[n] = '\0';
	TL_CHECK(strstr(exe, "openssl") != NULL, "pid %d is %s, not openssl: exec did not replace the tool",
		 (int)pid, exe);
	snprintf(args, sizeof(args), "/proc/%d/maps", (int)pid);
	TL_CHECK(rig_file_has(args, " /secretmem (deleted)"), "s_server has no secret memory");
	rig_stop(pid);
	TL_CHECK(!rig_file_has(log, "secretmem-preload"), "the module complained");
	printf("exec: environment, exit codes and a real OpenSSL program\n");
	return 0;
}
