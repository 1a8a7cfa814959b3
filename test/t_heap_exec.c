/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_exec - `secretmem exec --mode heap`: LD_PRELOAD gets the heap
 * module (and loses the OpenSSL preload module: one module per process,
 * also for exec under exec; --mode all drops the heap module the same
 * way), G_SLICE=always-malloc is set and PYTHONMALLOC and
 * SECRETMEM_OPENSSL are not; --report prints the figures at exit; the environment reaches exec'd descendants
 * (a grandchild shell and python3 run with the module active, python3's
 * objects in secret memory); set-user-ID and static programs are refused
 * with 125 unless --allow-unprotected; a module loaded by dlopen() stays
 * inactive.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static char tool[PATH_MAX];

static int run(const char *pre, const char *args, const char *out)
{
	return rig_sh("%s '%s' exec %s > '%s' 2>&1", pre, tool, args, out);
}

int main(void)
{
	char out[PATH_MAX], want[3 * PATH_MAX], pre[2 * PATH_MAX];

	tl_need_secretmem();
	const char *mod = hr_module();
	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	const char *preload = rig_preload();
	const char *dir = rig_tmpdir();
	snprintf(out, sizeof(out), "%s/exec.out", dir);

	TL_CHECK(run("", "--mode heap -- sh -c 'echo \"[$LD_PRELOAD] [$PYTHONMALLOC] [$G_SLICE] [${SECRETMEM_OPENSSL-unset}]\"'",
		     out) == 0, "exec --mode heap");
	rig_cat(out);
	/* PYTHONMALLOC is left alone: the module gives Python its arenas */
	snprintf(want, sizeof(want), "[%s] [] [always-malloc] [unset]", mod);
	TL_CHECK(rig_file_has(out, want), "want %s", want);

	/* --report: the figures at exit */
	TL_CHECK(run("", "--mode heap --report -- /bin/true", out) == 0 &&
		 rig_file_has(out, "secretmem-heap: report: pid ") && rig_file_has(out, ", active: secret "),
		 "--report under heap mode");
	/* as secretmem-heap(7) says: a program that closes standard error
	 * before it exits (sleep: GNU close_stdout) prints no report */
	TL_CHECK(run("", "--mode heap --report -- sleep 0", out) == 0 && !rig_file_has(out, "secretmem-heap: report"),
		 "--report under heap mode, standard error closed by the program: a report came after all");
	/* one module: the preload module (and a second heap module) go */
	snprintf(pre, sizeof(pre), "LD_PRELOAD='%s:/nonexistent-other.so:/elsewhere/libsecretmem-heap.so'", preload);
	TL_CHECK(run(pre, "--mode heap -- sh -c 'echo \"[$LD_PRELOAD]\"'", out) == 0, "exec --mode heap with LD_PRELOAD");
	snprintf(want, sizeof(want), "[%s:/nonexistent-other.so]", mod);
	TL_CHECK(rig_file_has(out, want), "want %s", want);
	snprintf(pre, sizeof(pre), "LD_PRELOAD='%s'", mod);
	TL_CHECK(run(pre, "--mode all -- sh -c 'echo \"[$LD_PRELOAD]\"'", out) == 0, "exec --mode all under heap");
	snprintf(want, sizeof(want), "[%s]", preload);
	TL_CHECK(rig_file_has(out, want), "want %s", want);

	/* descendants: a grandchild and python3 */
	TL_CHECK(run("", "--mode heap -- sh -c 'sh -c \"grep -c memfd:secretmem-heap-stats /proc/self/maps\"'", out) == 0 &&
		 rig_file_has(out, "1"), "the grandchild does not run with the module");
	if (access("/usr/bin/python3", X_OK) == 0) { /* not a wrapper from PATH */
		TL_CHECK(run("", "--mode heap -- /usr/bin/python3 -c \"import ctypes, sys; b = ctypes.create_string_buffer(100000); "
			     "a = ctypes.addressof(b); "
			     "print('secret' if [l for l in open('/proc/self/maps') if '/secretmem' in l and "
			     "int(l.split('-')[0], 16) <= a < int(l.split()[0].split('-')[1], 16)] else 'ordinary')\"",
			     out) == 0, "python3 under heap");
		rig_cat(out);
		TL_CHECK(rig_file_has(out, "secret"), "python3's buffer is not in secret memory");
		/* loaded by dlopen(), the module stays inactive */
		TL_CHECK(rig_sh("/usr/bin/python3 -c \"import ctypes; ctypes.CDLL('%s'); "
				"print('pages', open('/proc/self/maps').read().count('secretmem-heap-stats'))\" > '%s' 2>&1",
				mod, out) == 0 && rig_file_has(out, "pages 0") && !rig_file_has(out, "secretmem-heap"),
			 "dlopen()ed module became active or spoke");
	}

	/* refused: set-user-ID (of another user: only root can make one here;
	 * a set-user-ID file of the user who runs it changes no privilege),
	 * static */
	char args[PATH_MAX + 64];
	if (geteuid() == 0) {
		TL_CHECK(rig_sh("cd '%s' && cp /bin/true su-true && chown 65534 su-true && chmod 4755 su-true", dir) == 0,
			 "setup");
		snprintf(args, sizeof(args), "--mode heap -- '%s/su-true'", dir);
		TL_CHECK(run("", args, out) == 125 && rig_file_has(out, "is set-user-ID (owner uid 65534)"),
			 "set-user-ID not refused");
		snprintf(args, sizeof(args), "--mode heap --allow-unprotected -- '%s/su-true'", dir);
		TL_CHECK(run("", args, out) == 0 && rig_file_has(out, "nothing of it will be protected"),
			 "--allow-unprotected");
	} else {
		printf("set-user-ID refusal: not checked (needs root to make a set-user-ID file of another user)\n");
	}
	if (rig_sh("cd '%s' && printf 'int main(void) { return 3; }\\n' > st.c && cc -static -o static-prog st.c 2>/dev/null",
		   dir) == 0) {
		snprintf(args, sizeof(args), "--mode heap -- '%s/static-prog'", dir);
		TL_CHECK(run("", args, out) == 125 && rig_file_has(out, "is statically linked"), "static not refused");
	}
	TL_CHECK(run("", "--mode nope -- true", out) == 64 && rig_file_has(out, "(secure, all, heap or off)"), "usage");
	printf("pass\n");
	return 0;
}
