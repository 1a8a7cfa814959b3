/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_winner - another allocator in the process (secretmem-heap(7),
 * ANOTHER ALLOCATOR): with jemalloc, mimalloc or tcmalloc in LD_PRELOAD
 * after the module (secretmem exec --allow-unprotected puts the module
 * first) or before it, a C++ program (std::string, new/delete, iostream,
 * malloc/free, strdup) runs to its end with exit 0 - before the module
 * checked, jemalloc after it aborted the first delete ("free(): invalid
 * pointer", 134) - the module prints one warning naming the allocator and
 * where it stands and what to do (take it out of LD_PRELOAD; nothing to
 * take out when the program links it), --report says "inactive (...)", and `secretmem status`
 * lists the process as unprotected with the reason (text and --json).  A
 * program that defines malloc itself is named as "the program itself", and
 * what it lacks (aligned_alloc) goes to glibc's as without the module.  A
 * second copy of the module behind the first says nothing.
 * The control, heap mode alone, is active and says nothing.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static const char cxx_src[] =
	"#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <iostream>\n"
	"#include <string>\n#include <vector>\n#include <unistd.h>\n"
	"int main(int argc, char **) {\n"
	"  std::vector<std::string> v;\n"
	"  for (int i = 0; i < 1000; i++) v.push_back(std::string(40 + i % 300, 'k'));\n"
	"  int *a = new int[64]; delete[] a;\n"
	"  std::string *s = new std::string(500, 'x'); delete s;\n"
	"  char *c = (char *)malloc(100); strcpy(c, \"abc\"); char *d = strdup(c); free(c); free(d);\n"
	"  v.clear(); v.shrink_to_fit();\n"
	"  std::cout << \"ok\" << std::endl;\n"
	"  if (argc > 1) { std::printf(\"ready\\n\"); std::fflush(stdout); pause(); }\n"
	"  return 0;\n}\n";

/* A program with its own (bump) malloc: the program itself holds malloc. */
static const char own_src[] =
	"#include <stdio.h>\n#include <string.h>\n#include <sys/mman.h>\n"
	"static char *pool; static size_t used;\n"
	"void *malloc(size_t n) {\n"
	"  if (!pool) pool = mmap(0, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);\n"
	"  n = (n + 31) & ~(size_t)15; if (used + n > (64 << 20)) return 0;\n"
	"  char *p = pool + used + 16; memcpy(p - 16, &n, sizeof n); used += n; return p; }\n"
	"void free(void *p) { (void)p; }\n"
	"void *calloc(size_t a, size_t b) { return malloc(a * b); }\n"
	"void *realloc(void *p, size_t n) { void *q = malloc(n); size_t o;\n"
	"  if (q && p) { memcpy(&o, (char *)p - 16, sizeof o); memcpy(q, p, o - 16 < n ? o - 16 : n); } return q; }\n"
	"#include <stdint.h>\n#include <stdlib.h>\n"
	"int main(void) { char *s = strdup(\"own\"); void *a = aligned_alloc(64, 100);\n"
	"  printf(\"%s ok, aligned_alloc %s\\n\", s, a && (uintptr_t)a % 64 == 0 ? \"ok\" : \"failed\");\n"
	"  free(s); return 0; }\n";

static char tool[PATH_MAX];

/* The allocator's file under the usual library directories, or NULL. */
static const char *find_lib(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					    "/usr/lib/i386-linux-gnu", "/usr/lib64", "/usr/lib" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, len, "%s/%s", dirs[i], name);
		if (access(out, R_OK) == 0)
			return out;
	}
	return NULL;
}

static void one(const char *lib, const char *mod, const char *dir)
{
	char out[PATH_MAX], want[2 * PATH_MAX], cxx[PATH_MAX], linked[PATH_MAX];

	snprintf(out, sizeof(out), "%s/run.out", dir);
	snprintf(cxx, sizeof(cxx), "%s/cxx", dir);

	/* after the module: exec puts the module first */
	int rc = rig_sh("LD_PRELOAD='%s' '%s' exec --mode heap --allow-unprotected --report -- '%s' > '%s' 2>&1", lib,
			tool, cxx, out);
	rig_cat(out);
	TL_CHECK(rc == 0 && rig_file_has(out, "ok"), "%s after the module: exit %d", lib, rc);
	snprintf(want, sizeof(want),
		 "secretmem-heap: warning: inactive: another allocator holds malloc: %s (loaded after the module); "
		 "every block goes to it, in ordinary memory (take it out of LD_PRELOAD to protect the heap)", lib);
	TL_CHECK(rig_file_count(out, want) == 1, "%s after: want one line %s", lib, want);
	snprintf(want, sizeof(want), "inactive (another allocator holds malloc: %s (loaded after the module)): every "
		 "block in ordinary memory", lib);
	TL_CHECK(rig_file_has(out, want), "%s after: --report wants %s", lib, want);

	/* linked by the program: LD_PRELOAD is not where it comes from */
	snprintf(linked, sizeof(linked), "%s/cxx-linked", dir);
	TL_CHECK(rig_sh("c++ -O1 -o '%s' '%s/cxx.cc' '%s'", linked, dir, lib) == 0, "cannot link %s", lib);
	rc = rig_sh("'%s' exec --mode heap -- '%s' > '%s' 2>&1", tool, linked, out);
	rig_cat(out);
	/* named by the path the loader found it under (/lib or /usr/lib) */
	snprintf(want, sizeof(want),
		 "%s (loaded after the module); every block goes to it, in ordinary memory (the program links it, so "
		 "heap mode cannot protect this program's heap)", strrchr(lib, '/') + 1);
	TL_CHECK(rc == 0 && rig_file_has(out, "ok") && rig_file_count(out, want) == 1, "%s linked: want one line %s",
		 lib, want);

	/* before the module */
	rc = rig_sh("LD_PRELOAD='%s:%s' SECRETMEM_REPORT=1 '%s' > '%s' 2>&1", lib, mod, cxx, out);
	rig_cat(out);
	TL_CHECK(rc == 0 && rig_file_has(out, "ok"), "%s before the module: exit %d", lib, rc);
	snprintf(want, sizeof(want),
		 "secretmem-heap: warning: inactive: another allocator holds malloc: %s (loaded before the module)", lib);
	TL_CHECK(rig_file_count(out, want) == 1, "%s before: want one line %s", lib, want);

	/* status lists it as unprotected, with the reason */
	char pre[PATH_MAX + 16], text[PATH_MAX], json[PATH_MAX], log[PATH_MAX];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
	char *av[] = { tool, "exec", "--mode", "heap", "--allow-unprotected", "--", cxx, "hold", NULL };
	const char *env[] = { pre, NULL };
	snprintf(log, sizeof(log), "%s/hold.log", dir);
	pid_t pid = rig_spawn_ready(av, env, log);
	snprintf(text, sizeof(text), "%s/status.txt", dir);
	snprintf(json, sizeof(json), "%s/status.json", dir);
	rc = rig_sh("'%s' status > '%s' && '%s' status --json > '%s'", tool, text, tool, json);
	rig_stop(pid);
	rig_cat(text);
	TL_CHECK(rc == 0, "status failed");
	snprintf(want, sizeof(want), "unprotected: %d cxx (root): heap module inactive: another allocator holds "
		 "malloc: %s (loaded after the module)", (int)pid, lib);
	TL_CHECK(rig_file_has(text, want), "status text wants %s", want);
	TL_CHECK(rig_sh("python3 test/cli_json.py status '%s'", json) == 0, "status --json rejected");
	TL_CHECK(rig_sh("python3 - '%s' %d '%s' <<'EOF'\n"
			"import json, sys\n"
			"d = json.load(open(sys.argv[1])); pid = int(sys.argv[2])\n"
			"u = [x for x in d['unprotected'] if x['pid'] == pid][0]\n"
			"assert u['reason'] == 'heap module inactive: another allocator holds malloc: %%s (loaded after the "
			"module)' %% sys.argv[3], u\n"
			"h = [x for x in d['heap_without_secret_memory'] if x['pid'] == pid][0]['heap']\n"
			"assert h['state'] == 'inactive' and h['reason'].startswith('another allocator'), h\n"
			"EOF", json, (int)pid, lib) == 0, "status --json: unprotected entry wrong");
}

int main(void)
{
	char out[PATH_MAX], lib[PATH_MAX];
	static const char *const allocators[] = { "libjemalloc.so.2", "libmimalloc.so.2", "libtcmalloc_minimal.so.4" };

	tl_need_secretmem();
	tl_need_root("reads the figures page of another process through /proc/PID/mem");
	const char *mod = hr_module();
	if (!realpath(tl_build_path("secretmem"), tool))
		tl_skip("the secretmem tool is not built");
	const char *dir = rig_tmpdir();
	snprintf(out, sizeof(out), "%s/run.out", dir);
	if (rig_sh("command -v c++ >/dev/null") != 0)
		tl_skip("needs a C++ compiler (c++: Debian package g++)");
	TL_CHECK(rig_sh("cd '%s' && cat > cxx.cc <<'EOF'\n%sEOF\nc++ -O1 -o cxx cxx.cc && cat > own.c <<'EOF'\n%sEOF\n"
			"cc -O1 -o own own.c", dir, cxx_src, own_src) == 0, "cannot build the programs");

	/* the control: heap mode alone is active and silent */
	TL_CHECK(rig_sh("'%s' exec --mode heap --report -- '%s/cxx' > '%s' 2>&1", tool, dir, out) == 0 &&
		 rig_file_has(out, "ok") && rig_file_has(out, ", active: secret ") &&
		 !rig_file_has(out, "secretmem-heap: warning"), "control: heap mode alone");

	int found = 0;
	for (size_t i = 0; i < sizeof(allocators) / sizeof(allocators[0]); i++) {
		if (!find_lib(allocators[i], lib, sizeof(lib)))
			continue;
		printf("--- %s\n", lib);
		one(lib, mod, dir);
		found++;
	}

	/* the program defines malloc itself */
	int rc = rig_sh("'%s' exec --mode heap -- '%s/own' > '%s' 2>&1", tool, dir, out);
	rig_cat(out);
	char want[PATH_MAX + 100];
	snprintf(want, sizeof(want), "secretmem-heap: warning: inactive: another allocator holds malloc: the program "
		 "itself (%s/own); every block goes to it, in ordinary memory (the program's own malloc cannot be "
		 "replaced: run it without heap mode, or build it with glibc's malloc)", dir);
	TL_CHECK(rc == 0 && rig_file_has(out, "own ok, aligned_alloc ok") && rig_file_has(out, want),
		 "own malloc: want %s and its aligned_alloc", want);

	/* a second copy of the module: no other allocator, no word */
	TL_CHECK(rig_sh("cp '%s' '%s/libsecretmem-heap.so' && LD_PRELOAD='%s:%s/libsecretmem-heap.so' SECRETMEM_REPORT=1 "
			"'%s/cxx' > '%s' 2>&1", mod, dir, mod, dir, dir, out) == 0, "two copies");
	rig_cat(out);
	TL_CHECK(rig_file_count(out, "secretmem-heap: report: pid ") == 1 && rig_file_has(out, ", active: secret ") &&
		 !rig_file_has(out, "warning"), "two copies of the module: one report, active, no warning");
	if (!found)
		tl_skip("no other allocator installed (libjemalloc2, libmimalloc2.0 or libtcmalloc-minimal4)");
	printf("pass: %d allocators\n", found);
	return 0;
}
