/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_python - Python keeps its own small-object allocator in heap mode
 * (secretmem-heap(7), PYTHON): pymalloc's arenas come from the module.
 *
 *  scan:   /usr/bin/python3 reads a random 32-byte key and keeps it as a
 *          bytes object and its hex text (pymalloc objects), then sleeps.
 *          A root scan of /proc/PID/mem: plain (the control) finds both
 *          outside the stack; in heap mode (the module preloaded, no
 *          PYTHONMALLOC) nothing outside the stack, and the figures page
 *          says "arenas".
 *  root:   python3 in heap mode as root: PYTHONMALLOC stays unset, 20,000
 *          small bytes objects and a str live in secret memory, and an
 *          os.fork() child reads every one of them back.
 *  user:   the same as uid 65534 under `ulimit -l 8192`: the module sets
 *          PYTHONMALLOC=malloc (an arena is charged whole), the objects are
 *          in secret memory, the fork child reads them.
 *  userpy: as user with PYTHONMALLOC=pymalloc given: the module keeps it and
 *          gives the arenas; objects secret, fork child reads them.
 *  user -E: python3 -E as user: PYTHONMALLOC=malloc is set but ignored, and
 *          pymalloc's arenas are the module's: objects secret.
 *  dl:     a C program that loads libpython with dlopen() and runs the same
 *          code (root and user): the module gave the arenas (figures page),
 *          objects secret.
 */
#include <dlfcn.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "heapscan.h"
#include "tlib.h"

#define PYTHON "/usr/bin/python3"
#define LIMIT ((size_t)8 << 20)

static const char objects_py[] =
	"import os, sys\n"
	"def where(a):\n"
	"    for l in open('/proc/self/maps'):\n"
	"        lo, hi = (int(x, 16) for x in l.split()[0].split('-'))\n"
	"        if lo <= a < hi:\n"
	"            return 'secret' if '/secretmem' in l else 'ordinary'\n"
	"    return 'unmapped'\n"
	"objs = [b'k%06d' % i for i in range(20000)]\n"
	"text = 'x' * 40 + str(len(objs))\n"
	"print('PYTHONMALLOC', os.environ.get('PYTHONMALLOC'))\n"
	"w = {where(id(o)) for o in objs[::101]} | {where(id(text))}\n"
	"print('objects', ' '.join(sorted(w)))\n"
	"sys.stdout.flush()\n"
	"pid = os.fork()\n"
	"if pid == 0:\n"
	"    ok = all(o == b'k%06d' % i for i, o in enumerate(objs)) and text.endswith('20000')\n"
	"    os._exit(0 if ok else 1)\n"
	"_, st = os.waitpid(pid, 0)\n"
	"print('fork child', os.waitstatus_to_exitcode(st))\n"
	"sys.stdout.flush()\n";

static const char scan_py[] =
	"import sys, time\n"
	"with open(sys.argv[1], 'rb', buffering=0) as f:\n"
	"    key = f.read(32)\n"
	"text = key.hex()\n"
	"assert len(key) == 32 and len(text) == 64\n"
	"print('ready', flush=True)\n"
	"time.sleep(120)\n";

/* The libpython a dlopen() can load, or NULL. */
static const char *libpython(void)
{
	static char path[4096];
	glob_t g;

	if (glob("/usr/lib/*-linux-gnu/libpython3.*.so.1.0", 0, NULL, &g) != 0)
		return NULL;
	snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
	globfree(&g);
	return path;
}

static int case_python(const char *opt)
{
	if (opt)
		execl(PYTHON, PYTHON, opt, "-c", objects_py, (char *)NULL);
	else
		execl(PYTHON, PYTHON, "-c", objects_py, (char *)NULL);
	printf("exec %s failed\n", PYTHON);
	return 1;
}

static int case_dl(void)
{
	const char *lib = libpython();
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_GLOBAL) : NULL;

	TL_CHECK(h, "dlopen %s: %s", lib ? lib : "(none)", dlerror());
	void (*init)(int);
	int (*run)(const char *);
	void (*fin)(void);
	*(void **)&init = dlsym(h, "Py_InitializeEx");
	*(void **)&run = dlsym(h, "PyRun_SimpleString");
	*(void **)&fin = dlsym(h, "Py_Finalize");
	TL_CHECK(init && run && fin, "libpython's API");
	init(0);
	TL_CHECK(run(objects_py) == 0, "the Python code failed");
	fflush(stdout);
	struct sm_heap_stats st;
	if (hr_active()) {
		TL_CHECK(hr_stats(0, &st) == 0, "the figures page");
		printf("figures page: python %llu\n", (unsigned long long)st.python);
	}
	fin();
	return 0;
}

/* Run a case and check its Python lines. */
static void expect(const char *self, const char *c, int user, const char *const *env, const char *pm,
		   int figure)
{
	static char out[1 << 14];
	char want[64];
	int st = hr_run_user(self, c, 1, env, user ? LIMIT : 0, out, sizeof(out));

	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("%s", out);
		tl_skip("an ordinary user cannot run the tests here");
	}
	printf("== %s, heap mode, %s: %s\n%s", c, user ? "uid 65534 (ulimit -l 8192)" : "root", tl_status_str(st), out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", c);
	snprintf(want, sizeof(want), "PYTHONMALLOC %s\n", pm);
	TL_CHECK(strstr(out, want), "%s: want %s", c, want);
	TL_CHECK(strstr(out, "objects secret\n"), "%s: Python's objects are not all in secret memory", c);
	TL_CHECK(strstr(out, "fork child 0\n"), "%s: the fork child did not read the objects back", c);
	if (figure) {
		snprintf(want, sizeof(want), "figures page: python %d\n", figure);
		TL_CHECK(strstr(out, want), "%s: want %s", c, want);
	}
	TL_CHECK(!strstr(out, "secretmem-heap: warning"), "%s: the module warned", c);
}

static pid_t start_scan(int heap, const char *keyfile, const char *log)
{
	char *argv[] = { PYTHON, "-c", (char *)(uintptr_t)scan_py, (char *)(uintptr_t)keyfile, NULL };

	return rig_spawn_ready(argv, heap ? heap_env() : NULL, log);
}

static void case_scan(void)
{
	unsigned char key[32];
	char hex[65], keyfile[300], log[300];
	struct scan_key needles;
	struct sm_heap_stats st;

	heap_key_random(&needles, key, hex, keyfile, sizeof(keyfile));
	snprintf(log, sizeof(log), "%s/plain.log", rig_tmpdir());
	pid_t pid = start_scan(0, keyfile, log);
	struct heap_hits h = heap_scan_pid(&needles, pid, "python plain", "key,hex", 0);
	rig_stop(pid);
	printf("scan plain: %d copies outside the stack, %d on it\n", h.other, h.stack);
	snprintf(log, sizeof(log), "%s/heap.log", rig_tmpdir());
	pid = start_scan(1, keyfile, log);
	h = heap_scan_pid(&needles, pid, "python heap", NULL, 1);
	int fig = hr_stats(pid, &st);
	rig_stop(pid);
	printf("scan heap mode: %d copies outside the stack, %d on it; figures page python %llu\n", h.other,
	       h.stack, fig == 0 ? (unsigned long long)st.python : 0ull);
	TL_CHECK(fig == 0 && st.python == 1, "the figures page does not say the arenas are the module's");
	if (h.other) {
		rig_cat(log);
		TL_FAIL("in heap mode the key was found outside secret memory and the stack");
	}
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "python"))
			return case_python(NULL);
		if (!strcmp(argv[1], "python-E"))
			return case_python("-E");
		if (!strcmp(argv[1], "dl"))
			return case_dl();
		return 2;
	}
	if (access(PYTHON, X_OK) != 0)
		tl_skip("no " PYTHON " (sh scripts/deps.sh test)");
	tl_need_secretmem();
	hr_module();
	/* as an ordinary user: the cases under its own 8 MiB limit only */
	int root = geteuid() == 0;
	if (root)
		case_scan();
	else
		printf("scan and root cases: skipped, they need root\n");
	static const char *const pymalloc[] = { "PYTHONMALLOC=pymalloc", NULL };
	if (root)
		expect(argv[0], "python", 0, NULL, "None", 0);
	expect(argv[0], "python", 1, NULL, "malloc", 0);
	expect(argv[0], "python", 1, pymalloc, "pymalloc", 0);
	/* -E: Python ignores the PYTHONMALLOC=malloc the module set, and
	 * keeps pymalloc: the arenas are the module's all the same */
	expect(argv[0], "python-E", 1, NULL, "malloc", 0);
	if (libpython()) {
		if (root)
			expect(argv[0], "dl", 0, NULL, "None", 1);
		expect(argv[0], "dl", 1, NULL, "None", 1);
	} else {
		printf("dl: skipped, no libpython3.*.so.1.0\n");
	}
	printf("ok: Python keeps pymalloc with its arenas in secret memory (PYTHONMALLOC=malloc under a small "
	       "memory-lock limit), in python3 and in a program that loads libpython with dlopen\n");
	return TL_PASS;
}
