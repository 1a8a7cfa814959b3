/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_status_setid - `secretmem status` lists a process whose initial
 * environment asks for a module (LD_PRELOAD) that is not mapped in it
 * (secretmem(1), SECRETMEM STATUS; secretmem-heap(7) and
 * secretmem-preload(7), SET-ID PROGRAMS): a set-user-ID copy of sleep run
 * by root with LD_PRELOAD naming the heap module, and one naming the
 * preload module (the dynamic linker drops both in secure-execution mode,
 * silently), a statically linked program and one whose LD_PRELOAD names a
 * missing file, each as "unprotected" with
 * "libsecretmem-heap.so requested, not loaded (set-ID)" and so on, in the
 * text and in --json; a program that did load the module is not listed.
 * So is a set-ID one whose LD_PRELOAD comes after 70 KB of environment
 * (status read only the first 64 KiB of it and missed it).
 * Before, none of them was listed anywhere.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static char tool[PATH_MAX];

/* prog with LD_PRELOAD=pre, after 70 KB of other environment if pad,
 * running (its comm is comm) before this returns. */
static pid_t start(const char *prog, const char *pre, const char *comm, int pad)
{
	static char big[70 * 1000 + 8];
	char path[64], seen[64] = "", env0[PATH_MAX + 16], log[PATH_MAX];

	snprintf(env0, sizeof(env0), "LD_PRELOAD=%s", pre);
	snprintf(log, sizeof(log), "%s/%s.log", rig_tmpdir(), comm);
	char *av[] = { (char *)(uintptr_t)prog, "60", NULL };
	const char *env[] = { env0, NULL, NULL };
	if (pad) {
		memcpy(big, "BIG=", 4);
		memset(big + 4, 'x', sizeof(big) - 5);
		env[0] = big;
		env[1] = env0;
	}
	pid_t pid = rig_spawn(av, env, log, NULL, 0);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	for (int i = 0; i < 500 && strcmp(seen, comm) != 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(seen, sizeof(seen), f))
				seen[strcspn(seen, "\n")] = '\0';
			fclose(f);
		}
		nanosleep(&ts, NULL);
	}
	TL_CHECK(strcmp(seen, comm) == 0, "%s did not start (comm '%s')", prog, seen);
	usleep(100 * 1000); /* past the dynamic linker */
	return pid;
}

int main(void)
{
	char heap_su[PATH_MAX], pre_su[PATH_MAX], stat_prog[PATH_MAX], text[PATH_MAX], json[PATH_MAX], want[600];
	struct statvfs vfs;

	tl_need_root("runs a set-user-ID program as root and reads every process's environment");
	const char *heap = hr_module();
	const char *preload = rig_preload();
	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	const char *dir = rig_tmpdir();
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		tl_skip("the temporary directory is on a nosuid mount: no set-ID program runs from it");
	snprintf(heap_su, sizeof(heap_su), "%s/su-heap", dir);
	snprintf(pre_su, sizeof(pre_su), "%s/su-pre", dir);
	snprintf(stat_prog, sizeof(stat_prog), "%s/static-sleep", dir);
	snprintf(text, sizeof(text), "%s/status.txt", dir);
	snprintf(json, sizeof(json), "%s/status.json", dir);
	TL_CHECK(rig_sh("cd '%s' && for f in su-heap su-pre su-big; do cp /bin/sleep $f && chown 65534 $f && chmod 4755 $f; "
			"done", dir) == 0, "setup");
	int have_static = rig_sh("cd '%s' && printf '#include <unistd.h>\\nint main(void) { sleep(60); return 0; }\\n' "
				 "> st.c && cc -static -o static-sleep st.c 2>/dev/null", dir) == 0;

	pid_t a = start(heap_su, heap, "su-heap", 0);
	pid_t b = start(pre_su, preload, "su-pre", 0);
	pid_t c = have_static ? start(stat_prog, heap, "static-sleep", 0) : 0;
	pid_t d = start("/bin/sleep", heap, "sleep", 0); /* loads the module: not listed */
	/* LD_PRELOAD after 70 KB of environment (status read 64 KiB of it) */
	char big_su[PATH_MAX];
	snprintf(big_su, sizeof(big_su), "%s/su-big", dir);
	pid_t f = start(big_su, heap, "su-big", 1);
	TL_CHECK(rig_sh("ln -sf /bin/sleep '%s/nosleep'", dir) == 0, "symlink");
	char nosleep[PATH_MAX];
	snprintf(nosleep, sizeof(nosleep), "%s/nosleep", dir);
	pid_t e = start(nosleep, "/nonexistent/libsecretmem-heap.so", "nosleep", 0); /* no such file */
	int rc = rig_sh("'%s' status > '%s' && '%s' status --json > '%s'", tool, text, tool, json);
	rig_cat(text);
	rig_stop(a);
	rig_stop(b);
	rig_stop(d);
	rig_stop(e);
	rig_stop(f);
	if (c)
		rig_stop(c);
	TL_CHECK(rc == 0, "status failed");

	snprintf(want, sizeof(want), "unprotected: %d su-heap (root): libsecretmem-heap.so requested, not loaded (set-ID)",
		 (int)a);
	TL_CHECK(rig_file_has(text, want), "want %s", want);
	snprintf(want, sizeof(want), "unprotected: %d su-pre (root): libsecretmem-preload.so requested, not loaded "
		 "(set-ID)", (int)b);
	TL_CHECK(rig_file_has(text, want), "want %s", want);
	snprintf(want, sizeof(want), "unprotected: %d su-big (root): libsecretmem-heap.so requested, not loaded (set-ID)",
		 (int)f);
	TL_CHECK(rig_file_has(text, want), "want %s (LD_PRELOAD after 70 KB of environment)", want);
	if (c) {
		snprintf(want, sizeof(want), "unprotected: %d static-sleep (root): libsecretmem-heap.so requested, not "
			 "loaded (statically linked)", (int)c);
		TL_CHECK(rig_file_has(text, want), "want %s", want);
	}
	snprintf(want, sizeof(want), "unprotected: %d nosleep (root): libsecretmem-heap.so requested, not loaded (the "
		 "dynamic linker could not load it)", (int)e);
	TL_CHECK(rig_file_has(text, want), "want %s", want);
	snprintf(want, sizeof(want), "unprotected: %d sleep ", (int)d);
	TL_CHECK(!rig_file_has(text, want), "a process that loaded the module is listed");
	TL_CHECK(rig_sh("python3 test/cli_json.py status '%s'", json) == 0, "status --json rejected");
	TL_CHECK(rig_sh("python3 - '%s' %d %d %d <<'EOF'\n"
			"import json, sys\n"
			"d = json.load(open(sys.argv[1])); u = {x['pid']: x['reason'] for x in d['unprotected']}\n"
			"a, b, live = (int(x) for x in sys.argv[2:])\n"
			"assert u[a] == 'libsecretmem-heap.so requested, not loaded (set-ID)', u.get(a)\n"
			"assert u[b] == 'libsecretmem-preload.so requested, not loaded (set-ID)', u.get(b)\n"
			"assert live not in u, u[live]\n"
			"EOF", json, (int)a, (int)b, (int)d) == 0, "status --json: the unprotected list is wrong");
	printf("pass%s\n", c ? "" : " (no static libc here: the statically linked case was not run)");
	return 0;
}
