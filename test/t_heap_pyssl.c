/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Python's own test_ssl and test_hashlib (Debian's libpython3.11-testsuite,
 * run by the interpreter they belong to, /usr/bin/python3.11) pass under
 * heap mode (libsecretmem-heap.so preloaded; pymalloc's arenas from it) with the
 * same counts as without: per test module, tests run and tests skipped.
 * Both runs go at the same time (test_ssl spends most of its ~45 s
 * waiting), each on its own ports.  Without the module built, the plain run
 * alone is checked and the test skips.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <secretmem.h>
#include "heapscan.h"
#include "tlib.h"

#define PYTHON "/usr/bin/python3.11"
#define NMOD 2
static const char *const modules[NMOD] = { "test_ssl", "test_hashlib" };

struct counts {
	int ran[NMOD], skipped[NMOD], ok[NMOD];
	int success;
};

/* Parse regrtest -v output: "Ran N tests", "OK (skipped=K)", the verdict. */
static void parse(const char *log, struct counts *c)
{
	char line[4096];
	int cur = -1;
	FILE *f = fopen(log, "re");

	memset(c, 0, sizeof(*c));
	for (int i = 0; i < NMOD; i++)
		c->ran[i] = -1;
	if (!f)
		TL_FAIL("%s: %s", log, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		int n;
		const char *s;

		for (int i = 0; i < NMOD; i++) {
			char tag[64];

			snprintf(tag, sizeof(tag), "] %s", modules[i]);
			if (strstr(line, tag) && strstr(line, "load avg"))
				cur = i; /* "0:00:43 load avg: 1.13 [2/2] test_hashlib" */
		}
		if (cur >= 0 && sscanf(line, "Ran %d test", &n) == 1)
			c->ran[cur] = n;
		if (cur >= 0 && strncmp(line, "OK", 2) == 0) {
			c->ok[cur] = 1;
			if ((s = strstr(line, "skipped=")))
				c->skipped[cur] = atoi(s + 8);
		}
		if (strstr(line, "== Tests result: SUCCESS =="))
			c->success = 1;
	}
	fclose(f);
}

static int wait_for(pid_t pid, int seconds)
{
	int st;

	for (int i = 0; i < seconds * 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(100000);
	}
	return -1;
}

static pid_t start(int heap, const char *log)
{
	char *argv[] = { PYTHON, "-m", "test", "-v", (char *)"test_ssl", (char *)"test_hashlib", NULL };

	return rig_spawn(argv, heap ? heap_env() : NULL, log, rig_tmpdir(), 0);
}

static void report(const char *what, const struct counts *c)
{
	for (int i = 0; i < NMOD; i++)
		printf("%s: %s ran %d, skipped %d, %s\n", what, modules[i], c->ran[i], c->skipped[i],
		       c->ok[i] ? "OK" : "not OK");
}

/* Whether the module said anything in the log but, for an ordinary user
 * (no CAP_IPC_LOCK), the one warning that the memory-lock limit refused
 * secret memory (the suites then go on in ordinary memory, as documented). */
static int module_complained(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int bad = 0;

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "secretmem-heap:") &&
		    !(geteuid() != 0 && strstr(line, "secret memory refused (cause: memory-lock limit")))
			bad = 1;
	fclose(f);
	return bad;
}

int main(void)
{
	char plain_log[300], heap_log[300];
	struct counts plain, heap;
	int heap_mode = heap_module() != NULL, rc_plain, rc_heap = 0;
	pid_t p, h = -1;

	if (access(PYTHON, X_OK) != 0 || access("/usr/lib/python3.11/test/test_ssl.py", R_OK) != 0)
		tl_skip("no " PYTHON " with its test suite (Debian's libpython3.11-testsuite; sh scripts/deps.sh test)");
	snprintf(plain_log, sizeof(plain_log), "%s/plain.log", rig_tmpdir());
	snprintf(heap_log, sizeof(heap_log), "%s/heap.log", rig_tmpdir());
	if (heap_mode && secretmem_supported() == 0)
		h = start(1, heap_log);
	p = start(0, plain_log);
	rc_plain = wait_for(p, 170);
	if (h > 0)
		rc_heap = wait_for(h, 170);
	parse(plain_log, &plain);
	report("plain", &plain);
	if (rc_plain != 0 || !plain.success) {
		rig_cat(plain_log);
		TL_FAIL("python3.11 -m test test_ssl test_hashlib fails without the module (exit %d)", rc_plain);
	}
	for (int i = 0; i < NMOD; i++)
		TL_CHECK(plain.ran[i] > 0 && plain.ok[i], "plain run: no count for %s", modules[i]);
	heap_need_module("t_heap_pyssl");
	TL_CHECK(h > 0, "the heap run did not start");
	/* The heap run did run under the module (not a vacuous pass): the
	 * same interpreter with the same environment has its figures page
	 * and secret memory. */
	char check[300];
	snprintf(check, sizeof(check), "%s/active.log", rig_tmpdir());
	char *argv[] = { PYTHON, "-c",
			 "m = open('/proc/self/maps').read(); "
			 "print('module active' if 'secretmem-heap-stats' in m and '/secretmem' in m else 'inactive')",
			 NULL };
	pid_t c = rig_spawn(argv, heap_env(), check, rig_tmpdir(), 0);
	TL_CHECK(wait_for(c, 60) == 0 && rig_file_has(check, "module active"),
		 "python3.11 under the heap environment does not run with the module");
	parse(heap_log, &heap);
	report("heap", &heap);
	if (rc_heap != 0 || !heap.success || module_complained(heap_log)) {
		rig_cat(heap_log);
		TL_FAIL("python3.11 -m test test_ssl test_hashlib under heap mode: exit %d (log above)", rc_heap);
	}
	for (int i = 0; i < NMOD; i++)
		TL_CHECK(heap.ran[i] == plain.ran[i] && heap.skipped[i] == plain.skipped[i] && heap.ok[i],
			 "%s: heap mode ran %d (skipped %d), plain ran %d (skipped %d)", modules[i], heap.ran[i],
			 heap.skipped[i], plain.ran[i], plain.skipped[i]);
	printf("test_ssl and test_hashlib pass under heap mode with the same counts as without\n");
	return 0;
}
