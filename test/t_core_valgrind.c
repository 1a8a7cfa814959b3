/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_valgrind - a program using the library runs under valgrind.
 *
 * The library makes memfd_secret in a clone(CLONE_VM|CLONE_VFORK) child so
 * that a seccomp filter cannot kill the caller; valgrind supports no clone()
 * but a thread's and exits ("Valgrind has to exit now").  Under valgrind the
 * call is made in-process instead (valgrind answers it with ENOSYS itself).
 * The examples (allocator, stats, a region) must exit 0 under memcheck with
 * no error, on the fallback backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "tlib.h"

static int run(const char *example)
{
	char cmd[1024], out[8192];
	const char *path = tl_build_path(example);

	snprintf(cmd, sizeof(cmd), "valgrind -q --error-exitcode=9 %s 2>&1", path);
	FILE *f = popen(cmd, "r");
	TL_CHECK(f, "popen");
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(out, "Valgrind has to exit")) {
		printf("%s", out);
		TL_FAIL("%s under valgrind: %s", example, tl_status_str(st));
	}
	TL_CHECK(strstr(out, "fallback"), "%s: no fallback backend reported:\n%s", example, out);
	printf("ok: %s under valgrind\n", example);
	return 0;
}

int main(void)
{
#ifdef TL_SANITIZED
	printf("a sanitizer build: valgrind cannot run it\n");
	return TL_SKIP;
#endif
	if (tl_under_valgrind()) {
		printf("under valgrind already\n");
		return TL_SKIP;
	}
	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		printf("valgrind is not installed (scripts/deps.sh test installs it)\n");
		return TL_SKIP;
	}
	run("examples/keys");
	run("examples/region");
	return TL_PASS;
}
