/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_heap - the recipe of python/README.md for the copies Python makes
 * anyway: run the program under `secretmem exec --mode heap`.  A Python
 * program (Debian's /usr/bin/python3 with the binding of the tree) reads a
 * random 32-byte key into a secretmem.Secret (readinto, unbuffered), then
 * makes the copies the binding cannot prevent: bytes(view) and view.hex().
 * A root process scans it (/proc/PID/mem) for the key and its hex text.
 * Control, run plainly: both copies are found, outside the stack.  Under
 * `build/secretmem exec --mode heap --` (the heap module preloaded,
 * Python's pymalloc taking its arenas from it): nothing outside the stack,
 * and the module is active in the process.  Skips where the module is not built (after the
 * control), under a sanitizer build, or without root.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

#define PYTHON "/usr/bin/python3"

static const char child_py[] =
	"import sys, time, secretmem\n"
	"s = secretmem.Secret(32)\n"
	"v = s.view()\n"
	"with open(sys.argv[1], 'rb', buffering=0) as f:\n"
	"    assert f.readinto(v) == 32\n"
	"copy = bytes(v)      # a bytes object: in Python's heap\n"
	"text = v.hex()       # a str: in Python's heap\n"
	"print('ready', s.backend, len(copy), len(text), flush=True)\n"
	"time.sleep(120)\n";

static unsigned char key[32];
static char hex[65];

static pid_t start(int heap, const char *keyfile, const char *log)
{
	static char tool[PATH_MAX], pypath[PATH_MAX + 16], libpath[PATH_MAX + 24], pydir[PATH_MAX],
		lib[PATH_MAX];
	const char *env[] = { pypath, libpath, "PYTHONDONTWRITEBYTECODE=1", NULL };
	pid_t pid;

	if (!realpath("python", pydir) || !realpath(tl_build_path("libsecretmem.so.1"), lib))
		TL_FAIL("python/ or %s not found: run from the top of the tree after make",
			tl_build_path("libsecretmem.so.1"));
	snprintf(pypath, sizeof(pypath), "PYTHONPATH=%s", pydir);
	snprintf(libpath, sizeof(libpath), "SECRETMEM_LIBRARY=%s", lib);
	if (heap) {
		if (!realpath(tl_build_path("secretmem"), tool))
			TL_FAIL("%s not built", tl_build_path("secretmem"));
		char *argv[] = { tool, "exec", "--mode", "heap", "--", PYTHON, "-c", (char *)(uintptr_t)child_py,
				 (char *)(uintptr_t)keyfile, NULL };
		pid = rig_spawn(argv, env, log, rig_tmpdir(), 0);
	} else {
		char *argv[] = { PYTHON, "-c", (char *)(uintptr_t)child_py, (char *)(uintptr_t)keyfile, NULL };
		pid = rig_spawn(argv, env, log, rig_tmpdir(), 0);
	}
	for (int i = 0; i < 300 && !rig_file_has(log, "ready"); i++)
		usleep(100000);
	if (!rig_file_has(log, "ready secret 32 64")) {
		rig_cat(log);
		TL_FAIL("the python program (%s) did not get ready with a secret-memory Secret", heap ? "heap" : "plain");
	}
	return pid;
}

/* 1 if the process maps the heap module. */
static int module_active(pid_t pid)
{
	char path[64], line[1024];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, "libsecretmem-heap.so") != NULL;
	fclose(f);
	return found;
}

int main(void)
{
	char keyfile[300], plain_log[300], heap_log[300];
	struct scan_key needles;
	struct heap_hits h;
	pid_t pid;

	tl_need_root("the scan reads another process's memory");
	if (access(PYTHON, X_OK) != 0)
		tl_skip("no " PYTHON " (sh scripts/deps.sh test)");
	const char *build = getenv("SECRETMEM_BUILD");
	if (build && strstr(build, "san-"))
		tl_skip("a sanitizer build: its libsecretmem.so cannot be loaded into python3");
	tl_need_secretmem();
	heap_key_random(&needles, key, hex, keyfile, sizeof(keyfile));
	snprintf(plain_log, sizeof(plain_log), "%s/plain.log", rig_tmpdir());
	snprintf(heap_log, sizeof(heap_log), "%s/heap.log", rig_tmpdir());

	/* control: the copies are in the ordinary heap, and the scan finds them */
	pid = start(0, keyfile, plain_log);
	h = heap_scan_pid(&needles, pid, "python plain", "key,hex", 0);
	rig_stop(pid);
	printf("plain: %d copies outside the stack, %d on it\n", h.other, h.stack);

	heap_need_module("t_py_heap");
	pid = start(1, keyfile, heap_log);
	TL_CHECK(module_active(pid), "the program under secretmem exec --mode heap does not map the module");
	h = heap_scan_pid(&needles, pid, "python heap", NULL, 1);
	rig_stop(pid);
	TL_CHECK(!rig_file_has(heap_log, "secretmem-heap:"), "the heap module warned");
	printf("heap mode: %d copies outside the stack, %d on it\n", h.other, h.stack);
	if (h.other != 0) {
		rig_cat(heap_log);
		TL_FAIL("under secretmem exec --mode heap the key was found outside secret memory and the stack");
	}
	printf("bytes(view) and view.hex() of a Secret are only in secret memory under secretmem exec --mode heap\n");
	return 0;
}
