/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_exec_alloc - `secretmem exec --mode heap` refuses another malloc
 * in LD_PRELOAD (secretmem-heap(7), ANOTHER ALLOCATOR; secretmem(1)):
 * jemalloc by path and by bare name (found as the dynamic linker finds it),
 * a library of our own that defines only free() found through
 * LD_LIBRARY_PATH, and an entry of /etc/ld.so.preload (in a mount namespace
 * of its own, so the machine's file is not touched) are refused with exit
 * status 125 and a message naming the file and the symbol;
 * --allow-unprotected runs the program after a warning; modes secure and
 * all do not mind another allocator; $LIB, ${LIB} and $PLATFORM in an
 * entry are expanded as the dynamic linker does, and an entry exec cannot
 * expand ($ORIGIN) or whose expansion is not there gets a warning; glibc's
 * libc.so.6 is not another allocator; a library without malloc, a text
 * file, a truncated ELF file, an ELF file whose section table lies past
 * its end, a directory and a missing file are not allocators (the program
 * runs, the dynamic linker says what it makes of them).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static char tool[PATH_MAX], out[PATH_MAX];

static int run(const char *env, const char *args)
{
	int rc = rig_sh("%s '%s' exec %s > '%s' 2>&1", env, tool, args, out);
	rig_cat(out);
	return rc;
}

static const char *find_lib(const char *name, char *buf, size_t len)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					    "/usr/lib/i386-linux-gnu", "/usr/lib64", "/usr/lib" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(buf, len, "%s/%s", dirs[i], name);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}

int main(void)
{
	char je[PATH_MAX], env[3 * PATH_MAX], want[3 * PATH_MAX];

	tl_need_secretmem();
	hr_module();
	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	const char *dir = rig_tmpdir();
	snprintf(out, sizeof(out), "%s/exec.out", dir);
	if (!find_lib("libjemalloc.so.2", je, sizeof(je)))
		tl_skip("needs libjemalloc.so.2 (Debian package libjemalloc2)");
	TL_CHECK(rig_sh("cd '%s' && printf '#define _GNU_SOURCE\\n#include <dlfcn.h>\\n"
			"void free(void *p) { ((void (*)(void *))dlsym(RTLD_NEXT, \"free\"))(p); }\\n' > myfree.c && "
			"cc -shared -fPIC -o libmyfree.so myfree.c && printf 'int f(void) { return 1; }\\n' > plain.c && "
			"cc -shared -fPIC -o libplain.so plain.c && echo text > libtext.so && head -c 100 '%s' > "
			"libtrunc.so && cp libplain.so libfar.so && "
			"printf '\\377\\377\\377\\377\\377\\377\\377\\177' | dd of=libfar.so bs=1 seek=40 conv=notrunc "
			"2>/dev/null && mkdir libdir.so", dir, je) == 0, "cannot build the libraries");

	/* by path, by bare name: 125 naming the file and the symbol */
	snprintf(env, sizeof(env), "LD_PRELOAD='%s'", je);
	TL_CHECK(run(env, "--mode heap -- true") == 125, "jemalloc by path not refused");
	snprintf(want, sizeof(want), "secretmem: exec: refusing to run true: LD_PRELOAD loads %s, which defines malloc: "
		 "another allocator would hold the heap and the heap module would stay inactive (--allow-unprotected "
		 "runs it anyway; without that file in the list the heap is protected)", je);
	TL_CHECK(rig_file_has(out, want), "want %s", want);
	TL_CHECK(run("LD_PRELOAD=libjemalloc.so.2", "--mode heap -- true") == 125 &&
		 rig_file_has(out, "libjemalloc.so.2, which defines malloc"), "jemalloc by name not refused");
	snprintf(env, sizeof(env), "LD_LIBRARY_PATH='%s' LD_PRELOAD='libplain.so:libmyfree.so'", dir);
	TL_CHECK(run(env, "--mode heap -- true") == 125, "a library defining free not refused");
	snprintf(want, sizeof(want), "LD_PRELOAD loads %s/libmyfree.so, which defines free", dir);
	TL_CHECK(rig_file_has(out, want), "want %s", want);

	/* --allow-unprotected: runs, says so, and so does the module */
	snprintf(env, sizeof(env), "LD_PRELOAD='%s'", je);
	TL_CHECK(run(env, "--mode heap --allow-unprotected -- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran"),
		 "--allow-unprotected did not run it");
	snprintf(want, sizeof(want), "secretmem: exec: warning: sh: nothing of its heap will be protected: LD_PRELOAD "
		 "loads %s, which defines malloc", je);
	TL_CHECK(rig_file_has(out, want) && rig_file_has(out, "secretmem-heap: warning: inactive: another allocator "
								"holds malloc: "), "want %s", want);
	/* the preload module's modes do not mind */
	TL_CHECK(run(env, "--mode all -- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran") &&
		 !rig_file_has(out, "refusing"), "mode all refused another allocator");
	TL_CHECK(run(env, "-- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran"), "mode secure refused it");

	/* glibc's own libc defines malloc, but the module (first in
	 * LD_PRELOAD) overrides it: not another allocator */
	TL_CHECK(run("LD_PRELOAD=libc.so.6", "--mode heap -- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran") &&
		 !rig_file_has(out, "refusing") && !rig_file_has(out, "warning"), "LD_PRELOAD=libc.so.6 refused");

	/* dynamic string tokens, expanded as ld.so does: $PLATFORM (x86_64
	 * here; haswell and xeon_phi are checked too) and $LIB (the C
	 * library's directory without / and usr/: lib/x86_64-linux-gnu) */
	struct utsname un;
	TL_CHECK(uname(&un) == 0, "uname");
	TL_CHECK(rig_sh("cd '%s' && mkdir -p 'plat/%s' && cp libmyfree.so 'plat/%s/'", dir, un.machine, un.machine) == 0,
		 "cannot make the platform directory");
	snprintf(env, sizeof(env), "LD_PRELOAD='%s/plat/$PLATFORM/libmyfree.so'", dir);
	TL_CHECK(run(env, "--mode heap -- true") == 125, "$PLATFORM: not refused");
	snprintf(want, sizeof(want), "LD_PRELOAD loads %s/plat/%s/libmyfree.so, which defines free", dir, un.machine);
	TL_CHECK(rig_file_has(out, want), "want %s", want);
	if (strcmp(je, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2") == 0 &&
	    access("/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0) {
		TL_CHECK(run("LD_PRELOAD='/usr/$LIB/libjemalloc.so.2'", "--mode heap -- true") == 125 &&
			 rig_file_has(out, "loads /usr/lib/x86_64-linux-gnu/libjemalloc.so.2, which defines malloc"),
			 "$LIB: not refused");
		TL_CHECK(run("LD_PRELOAD='/usr/${LIB}/libjemalloc.so.2'", "--mode heap -- true") == 125, "${LIB}: not refused");
	} else {
		printf("note: not Debian's x86-64 layout: $LIB not checked\n");
	}
	/* $ORIGIN (the program's directory), and an expansion that is not
	 * there: a warning naming the entry, the program runs */
	TL_CHECK(run("LD_PRELOAD='$ORIGIN/libx.so'", "--mode heap -- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran") &&
		 rig_file_has(out, "warning: LD_PRELOAD entry $ORIGIN/libx.so: exec cannot tell which file"),
		 "$ORIGIN: no warning");
	TL_CHECK(run("LD_PRELOAD='/nonexistent/$PLATFORM/libx.so'", "--mode heap -- sh -c 'echo ran'") == 0 &&
		 rig_file_has(out, "warning: LD_PRELOAD entry /nonexistent/$PLATFORM/libx.so: exec cannot tell"),
		 "an expansion not found: no warning");

	/* SECRETMEM_REPORT=on: a switch like the others, the heap module
	 * reports too */
	TL_CHECK(run("SECRETMEM_REPORT=on", "--mode heap -- true") == 0 && rig_file_has(out, "secretmem-heap: report:"),
		 "SECRETMEM_REPORT=on: no report from the heap module");

	/* not allocators: the program runs */
	static const char *const others[] = { "libplain.so", "libtext.so", "libtrunc.so", "libfar.so", "libdir.so",
					      "libmissing.so" };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(env, sizeof(env), "LD_PRELOAD='%s/%s'", dir, others[i]);
		TL_CHECK(run(env, "--mode heap -- sh -c 'echo ran'") == 0 && rig_file_has(out, "ran") &&
			 !rig_file_has(out, "refusing"), "%s: refused or failed", others[i]);
	}

	/* /etc/ld.so.preload, in a mount namespace of its own */
	if (rig_sh("unshare -m true 2>/dev/null") == 0) {
		int rc = rig_sh("cd '%s' && mkdir -p ov/u ov/w && unshare -m sh -c \"mount -t overlay overlay -o "
				"lowerdir=/etc,upperdir=ov/u,workdir=ov/w /etc || exit 90; echo '# test' > "
				"/etc/ld.so.preload && echo '%s' >> /etc/ld.so.preload && '%s' exec --mode heap -- true\" "
				"> '%s' 2>&1", dir, je, tool, out);
		rig_cat(out);
		if (rc == 90) {
			printf("note: no overlay mount here: the /etc/ld.so.preload case was not run\n");
		} else {
			snprintf(want, sizeof(want), "/etc/ld.so.preload loads %s, which defines malloc", je);
			TL_CHECK(rc == 125 && rig_file_has(out, want), "/etc/ld.so.preload: exit %d, want %s", rc, want);
		}
	} else {
		printf("note: no mount namespace here: the /etc/ld.so.preload case was not run\n");
	}
	printf("pass\n");
	return 0;
}
