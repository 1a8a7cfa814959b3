/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* probe.c - running the OpenSSL helper of the preload tests; see probe.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

const char *probe_path(void)
{
	static char path[PATH_MAX];

	if (!path[0] && !realpath(tl_build_path("test/helpers/ossl_probe"), path))
		tl_skip("the helper build/test/helpers/ossl_probe is not built (make check builds it)");
	return path;
}

int probe_run(const char *mode, const char *extra, size_t memlock, const char *log, const char *const args[])
{
	const char *env[10] = { NULL };
	char *argv[16];
	int n = 0, k = 0, status;
	pid_t pid;

	argv[n++] = (char *)(uintptr_t)probe_path();
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)(uintptr_t)args[i];
	argv[n] = NULL;
	if (mode)
		for (const char *const *e = rig_env(mode); *e && k < 6; e++)
			if (strncmp(*e, "ASAN_OPTIONS=", 13) != 0)
				env[k++] = *e;
	/* Sanitizer builds: the helper asks for SIZE_MAX bytes on purpose. */
	env[k++] = "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1";
	env[k++] = "TSAN_OPTIONS=allocator_may_return_null=1";
	if (extra)
		env[k++] = extra;
	env[k] = NULL;
	pid = memlock ? rig_spawn_limited(argv, env, log, memlock) : rig_spawn(argv, env, log, rig_tmpdir(), 0);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
