/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cli_run.h - helpers of the CLI tests (test/t_cli_*.c): run the built
 * `secretmem` as a user would and check its JSON with test/cli_json.py.
 */
#ifndef SECRETMEM_CLI_RUN_H
#define SECRETMEM_CLI_RUN_H

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tlib.h"

/*
 * Runs the built CLI as a user would: args[0] is ignored (the CLI's path is
 * tl_build_path("secretmem")), stdout goes to out (NUL-terminated), stderr
 * is appended after it when merge is set.  pre, if not NULL, runs in the
 * child before exec (e.g. to install a seccomp filter); it returns 0 or an
 * exit code.  Returns the wait status.
 */
static inline int run_cli(char **args, char *out, size_t outlen, int merge, int (*pre)(void))
{
	char path[] = "/tmp/t_cli-out-XXXXXX";
	int fd = mkstemp(path), status;

	if (fd < 0)
		TL_FAIL("mkstemp: %s", strerror(errno));
	unlink(path);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int rc = pre ? pre() : 0;
		if (rc)
			_exit(rc);
		dup2(fd, STDOUT_FILENO);
		if (merge)
			dup2(fd, STDERR_FILENO);
		static char cli[4096];
		snprintf(cli, sizeof(cli), "%s", tl_build_path("secretmem"));
		args[0] = cli;
		execv(args[0], args);
		_exit(126);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	ssize_t n = pread(fd, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		TL_FAIL("cannot execute %s", tl_build_path("secretmem"));
	return status;
}

/* Saves text to a temporary file for the JSON checker; returns its path. */
static inline char *save_tmp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/t_cli-json-XXXXXX");
	int fd = mkstemp(path);
	size_t len = strlen(text);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		TL_FAIL("temporary file: %s", strerror(errno));
	close(fd);
	return path;
}

/* Runs test/cli_json.py with args; 0 when it accepts.  Skips without python3. */
static inline int json_ok(char **args)
{
	int status;

	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		execvp("python3", args);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		tl_skip("python3 is not installed (scripts/deps.sh installs it)");
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#endif
