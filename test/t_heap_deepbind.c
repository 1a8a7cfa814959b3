/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_deepbind - a library opened with dlopen(RTLD_DEEPBIND) under the
 * heap module (secretmem-heap(7), RTLD_DEEPBIND): its malloc API calls are
 * bound to the module, so blocks cross in both directions and its blocks
 * are secret memory.
 *
 * The child opens a library of ours (built here twice: lazily bound, and
 * with -z relro -z now, whose slots are read-only after loading) with
 * RTLD_DEEPBIND and: keeps a block the library malloc()ed and one it
 * calloc()ed (both must be secret memory), has the library realloc() a
 * block of the program's to 20000 bytes (contents kept), free() one, and
 * free() one through the address of free it took (a GOT entry, not a call
 * slot), frees a block of the library's itself, and waits.  A root
 * process then reads all its memory for the two patterns the program wrote
 * into the library's block and into the block the library grew: the
 * control (no module) finds both, heap mode neither.  The module says once
 * per library that it bound it ("... its malloc API calls are bound to the
 * module (4 slots in 1 object), so its blocks are secret memory too").  Before the module did, the child died in
 * the library's realloc() (glibc: "realloc(): invalid pointer", SIGABRT).
 * The block the library's constructor allocated inside dlopen() is
 * ordinary memory and freed without harm.  The module's dlopen() keeps the
 * caller's search path: a program with a DT_RUNPATH opens a library by a
 * name found only there, with and without RTLD_DEEPBIND.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

#define SEED_A 0x5eedaull
#define SEED_B 0x5eedbull
#define NEEDLE 64

static const char lib_src[] =
	"#include <stdlib.h>\n"
	"static void *early;\n"
	"__attribute__((constructor)) static void ctor(void) { early = malloc(40); }\n"
	"void *deep_ctor_block(void) { return early; }\n"
	"void *deep_alloc(size_t n) { return malloc(n); }\n"
	"void *deep_calloc(size_t n) { return calloc(1, n); }\n"
	"void *deep_grow(void *p, size_t n) { return realloc(p, n); }\n"
	"void deep_free(void *p) { free(p); }\n"
	"void (*deep_free_ptr(void))(void *) { return free; }\n";

static int child(const char *lib, int heap)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_DEEPBIND);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 2;
	}
	void *(*d_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
	void *(*d_calloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_calloc");
	void *(*d_grow)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "deep_grow");
	void (*d_free)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	void (*(*d_free_ptr)(void))(void *) = (void (*(*)(void))(void *))dlsym(h, "deep_free_ptr");
	void *(*d_ctor)(void) = (void *(*)(void))dlsym(h, "deep_ctor_block");
	if (!d_alloc || !d_calloc || !d_grow || !d_free || !d_free_ptr || !d_ctor)
		return 2;
	void *c = d_ctor(); /* made inside dlopen(), before the rebinding: glibc's */
	printf("constructor's block %c\n", hr_where(c));
	d_free(c);

	unsigned char *a = d_alloc(200); /* the library's block, kept */
	tl_fill(a, NEEDLE, SEED_A);
	unsigned char *f = d_calloc(300);
	unsigned char *b = malloc(200); /* the program's block, grown by the library */
	tl_fill(b, NEEDLE, SEED_B);
	b = d_grow(b, 20000);
	if (!b || !tl_check(b, NEEDLE, SEED_B)) {
		printf("the library's realloc lost the contents\n");
		return 1;
	}
	d_free(malloc(64));          /* the program's block, freed by the library */
	free(d_alloc(64));           /* the library's block, freed by the program */
	d_free_ptr()(malloc(32));    /* through the address the library took */
	char wa = (char)hr_where(a), wb = (char)hr_where(b), wf = (char)hr_where(f);
	printf("where: library's block %c, grown block %c, calloc %c\n", wa, wb, wf);
	if (heap && (wa != 's' || wb != 's' || wf != 's'))
		return 1;
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}

/* Run the child (heap: under the module) and scan it; the copies found. */
static int run(const char *self, const char *lib, const char *mod, int heap, const char *log)
{
	struct scan_key key;
	struct scan_result res;
	unsigned char na[NEEDLE], nb[NEEDLE];
	char pre[PATH_MAX + 16];

	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", mod);
	char *av[] = { (char *)(uintptr_t)self, heap ? "heap" : "plain", (char *)(uintptr_t)lib, NULL };
	const char *env[] = { heap ? pre : NULL, NULL };
	pid_t pid = rig_spawn_ready(av, env, log);
	memset(&key, 0, sizeof(key));
	tl_fill(na, sizeof(na), SEED_A);
	tl_fill(nb, sizeof(nb), SEED_B);
	TL_CHECK(scan_key_add(&key, "library's", "a", 1, na, sizeof(na), 0) == 0 &&
		 scan_key_add(&key, "grown", "b", 1, nb, sizeof(nb), 0) == 0, "needles");
	int n = scan_pid(&key, pid, &res, heap ? "heap" : "plain");
	scan_report(&key, &res, heap ? "heap" : "plain");
	TL_CHECK(n >= 0, "scan failed");
	if (!heap)
		TL_CHECK(scan_all_required_found(&key, &res) == 0, "control: the scanner did not find the patterns");
	scan_result_free(&res);
	scan_key_free(&key);
	rig_stop(pid);
	return n;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], log[PATH_MAX], lib[PATH_MAX], want[2 * PATH_MAX];

	if (argc > 2)
		return child(argv[2], strcmp(argv[1], "heap") == 0);
	tl_need_secretmem();
	tl_need_root("reads the child's memory through /proc/PID/mem");
	const char *mod = hr_module();
	TL_CHECK(realpath(argv[0], self), "realpath");
	const char *dir = rig_tmpdir();
	TL_CHECK(rig_sh("cd '%s' && cat > deep.c <<'EOF'\n%sEOF\ncc -O1 -shared -fPIC -o libdeep-lazy.so deep.c && "
			"cc -O1 -shared -fPIC -Wl,-z,relro,-z,now -o libdeep-now.so deep.c", dir, lib_src) == 0,
		 "cannot build the library");
	snprintf(log, sizeof(log), "%s/child.log", dir);
	static const char *const libs[] = { "libdeep-lazy.so", "libdeep-now.so" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(lib, sizeof(lib), "%s/%s", dir, libs[i]);
		TL_CHECK(run(self, lib, mod, 0, log) > 0, "control: nothing found");
		int n = run(self, lib, mod, 1, log);
		rig_cat(log);
		TL_CHECK(n == 0, "%s: %d copies in ordinary memory under the heap module", libs[i], n);
		snprintf(want, sizeof(want), "secretmem-heap: warning: %s was opened with RTLD_DEEPBIND: its malloc API "
			 "calls are bound to the module (", lib);
		TL_CHECK(rig_file_count(log, want) == 1, "%s: want one line %s", libs[i], want);
		TL_CHECK(rig_file_has(log, "constructor's block o"), "%s: the constructor's block", libs[i]);
	}
	/* the caller's search path, through the module's dlopen() */
	TL_CHECK(rig_sh("cd '%s' && mkdir -p rp && cp libdeep-lazy.so rp/libdeeprp.so && cp libdeep-lazy.so rp/libdeeprp2.so && cat > rpm.c <<'EOF'\n"
			"#include <dlfcn.h>\n#include <stdio.h>\n"
			"int main(void) { void *a = dlopen(\"libdeeprp.so\", RTLD_NOW);\n"
			"  void *b = dlopen(\"libdeeprp2.so\", RTLD_NOW | RTLD_DEEPBIND);\n"
			"  printf(\"found %%d %%d\\n\", a != 0, b != 0); return !(a && b); }\nEOF\n"
			"cc -o rpm rpm.c -ldl -Wl,--enable-new-dtags -Wl,-rpath,'%s/rp' && LD_PRELOAD='%s' ./rpm > rpm.out 2>&1",
			dir, dir, mod) == 0, "the module's dlopen() lost the caller's DT_RUNPATH");
	printf("pass\n");
	return 0;
}
