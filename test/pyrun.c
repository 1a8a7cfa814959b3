/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* pyrun.c - the Python tests' runner; see pyrun.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pyrun.h"
#include "tlib.h"

void pyrun_unittest(const char *const modules[])
{
	char cmd[1024], line[4096], reason[512] = "";
	const char *build = getenv("SECRETMEM_BUILD");
	int ran = -1, skipped = 0, status;
	size_t len;
	FILE *p;

	if (access(PYRUN_PYTHON, X_OK) != 0)
		tl_skip("no " PYRUN_PYTHON " (sh scripts/deps.sh test installs python3)");
	if (build && strstr(build, "san-"))
		tl_skip("a sanitizer build: its libsecretmem.so cannot be loaded into python3");
	if (access("python/secretmem/__init__.py", R_OK) != 0)
		TL_FAIL("python/secretmem not found: run from the top of the tree");
	/* the binding from the tree, no __pycache__ left in it */
	setenv("PYTHONPATH", "python:python/tests", 1);
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	unsetenv("SECRETMEM_LIBRARY"); /* the build tree's library */
	len = (size_t)snprintf(cmd, sizeof(cmd), "exec " PYRUN_PYTHON " -m unittest -v");
	for (int i = 0; modules[i]; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " %s", modules[i]);
	TL_CHECK(len < sizeof(cmd) - 8, "command too long");
	strcat(cmd, " 2>&1");
	fflush(stdout);
	p = popen(cmd, "r");
	TL_CHECK(p != NULL, "popen %s", cmd);
	while (fgets(line, sizeof(line), p)) {
		char *s;

		fputs(line, stdout);
		if (sscanf(line, "Ran %d test", &ran) == 1)
			continue;
		if ((s = strstr(line, " ... skipped "))) {
			skipped++;
			if (!reason[0])
				snprintf(reason, sizeof(reason), "%s", s + 13);
		}
	}
	status = pclose(p);
	reason[strcspn(reason, "\n")] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		TL_FAIL("python3 -m unittest: %s (%d tests ran)", tl_status_str(status), ran);
	if (ran <= 0)
		TL_FAIL("no Python test ran");
	/* exit 0: no failure nor error, so every test that ran and was not
	 * skipped passed */
	printf("%d Python tests: %d passed, %d skipped\n", ran, ran - skipped, skipped);
	if (skipped == ran) {
		char why[600];

		snprintf(why, sizeof(why), "all %d Python tests skipped: %s", ran, reason);
		tl_skip(why);
	}
	exit(TL_PASS);
}
