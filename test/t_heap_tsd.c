/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_tsd - re-entry: a library whose constructor creates 40
 * pthread keys before the heap module starts (preloaded after it, so its
 * constructor runs first) makes every pthread_setspecific of the module
 * and of the library call calloc() from inside the module.  Those calls go
 * to the early arena (and to glibc once it is full), the program runs, 300
 * threads start and end, their blocks are freed again (early and plain
 * counts back where they were), and the program's own blocks stay secret.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "scan.h"
#include "tlib.h"

static void *work(void *arg)
{
	char *p = malloc(100);

	if (!p)
		return (void *)1;
	memset(p, 1, 100);
	if (hr_where(p) != 's')
		return (void *)1;
	free(p);
	return arg;
}

static int child(void)
{
	struct sm_heap_stats a, b;

	TL_CHECK(hr_active(), "the heap module is not active");
	TL_CHECK(hr_stats(0, &a) == 0, "figures");
	printf("at start: early %llu bytes in %llu blocks\n", (unsigned long long)a.early_bytes,
	       (unsigned long long)a.early_blocks);
	TL_CHECK(a.early_blocks >= 1, "no re-entrant call reached the early arena (keys not >= 32?)");
	for (int i = 0; i < 300; i++) {
		pthread_t t;
		void *r;
		TL_CHECK(pthread_create(&t, NULL, work, NULL) == 0 && pthread_join(t, &r) == 0 && !r, "thread %d", i);
	}
	TL_CHECK(hr_stats(0, &b) == 0, "figures");
	printf("after 300 threads: early %llu blocks, plain %llu blocks\n", (unsigned long long)b.early_blocks,
	       (unsigned long long)b.plain_blocks);
	TL_CHECK(b.early_blocks == a.early_blocks && b.plain_blocks == a.plain_blocks, "thread blocks not freed");
	printf("child ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	char so[PATH_MAX], env[2 * PATH_MAX + 32], out[8192];

	if (argc > 1)
		return child();
	tl_need_secretmem();
	const char *mod = hr_module();
	const char *dir = rig_tmpdir();
	snprintf(so, sizeof(so), "%s/keys40.so", dir);
	if (rig_sh("printf '#include <pthread.h>\\n__attribute__((constructor)) static void k(void) { pthread_key_t "
		   "k; for (int i = 0; i < 40; i++) pthread_key_create(&k, 0); }\\n' | cc -shared -fPIC -x c -o '%s' - "
		   "-pthread", so) != 0)
		tl_skip("no C compiler to build the test library");
	snprintf(env, sizeof(env), "LD_PRELOAD=%s:%s", mod, so);
	const char *e[] = { env, NULL };
	int st = hr_run(argv[0], "run", 0, e, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "child: %s", tl_status_str(st));
	printf("pass\n");
	return 0;
}
