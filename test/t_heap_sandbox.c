/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_sandbox - a sandbox that refuses memfd_secret (a seccomp filter
 * installed while the program runs): new heap blocks come from the
 * library's locked fallback backend (mlock'ed, out of core dumps), the
 * program keeps running, its figures page counts the fallback bytes, and
 * the blocks made before stay secret.  With SECRETMEM_REQUIRE=1 malloc
 * returns NULL (ENOMEM) once the secret memory already mapped is used up.
 * A filter inherited at start (ERRNO EPERM, then ENOSYS): the heap is in
 * the fallback from its first block, and the module says so in one
 * warning naming the cause (it said nothing).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

#define N 4000 /* 4000 * 1 KiB: more than the first chunk */

static int child(const char *mode)
{
	static char *blk[N];
	int secret = 0, fallback = 0, other = 0, failed = 0;

	TL_CHECK(hr_active(), "the heap module is not active");
	char *before = malloc(100);
	TL_CHECK(before && hr_where(before) == 's', "block before the sandbox");
	TL_CHECK(tl_seccomp_block(SYS_memfd_secret, EPERM) == 0, "seccomp filter");
	for (int i = 0; i < N; i++) {
		errno = 0;
		blk[i] = malloc(1024);
		if (!blk[i]) {
			TL_CHECK(errno == ENOMEM, "errno %d", errno);
			failed++;
			continue;
		}
		memset(blk[i], 7, 1024);
		int w = hr_where(blk[i]);
		secret += w == 's';
		fallback += w == 'f';
		other += w != 's' && w != 'f';
	}
	struct sm_heap_stats st;
	TL_CHECK(hr_stats(0, &st) == 0, "figures");
	printf("secret %d fallback %d other %d failed %d; figures: fallback %llu bytes, plain %llu blocks\n", secret,
	       fallback, other, failed, (unsigned long long)st.fallback_bytes, (unsigned long long)st.plain_blocks);
	TL_CHECK(hr_where(before) == 's', "the earlier block left secret memory");
	if (strcmp(mode, "require") == 0) {
		TL_CHECK(failed > 0 && fallback == 0 && other == 0, "require: blocks outside secret memory");
	} else {
		TL_CHECK(failed == 0 && fallback > 0 && other == 0, "default: no fallback blocks, or ordinary ones");
		TL_CHECK(st.fallback_bytes > 0 && st.plain_blocks == 0, "figures");
	}
	printf("child ok\n");
	return 0;
}

/* The heap started under the filter: every block in the fallback. */
static int child_start(void)
{
	int fallback = 0;

	TL_CHECK(hr_active(), "the heap module is not active");
	for (int i = 0; i < 100; i++) {
		char *p = malloc(1024);
		TL_CHECK(p, "malloc: %s", strerror(errno));
		fallback += hr_where(p) == 'f';
	}
	printf("fallback %d of 100\nchild ok\n", fallback);
	return fallback == 100 ? 0 : 1;
}

static const char *self;
static char out[16384];

/* Runs the program again under a filter refusing memfd_secret with errno
 * (arg): the heap starts there. */
static int under_filter(void *arg)
{
	int err = (int)(intptr_t)arg;

	TL_CHECK(tl_seccomp_block(SYS_memfd_secret, err) == 0, "seccomp filter");
	int st = hr_run(self, "start", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "start: %s", tl_status_str(st));
	const char *want = err == ENOSYS ? "secretmem-heap: warning: memfd_secret(2) is not usable here (cause: not in "
					   "this kernel): the heap is in libsecretmem's locked fallback"
					 : "secretmem-heap: warning: memfd_secret(2) is not usable here (cause: sandbox): "
					   "the heap is in libsecretmem's locked fallback";
	const char *w = strstr(out, want);
	TL_CHECK(w, "no warning that the heap is in the fallback, with its cause");
	TL_CHECK(strstr(out, "warning") == strstr(w, "warning") && !strstr(strchr(w, '\n'), "warning"),
		 "more than one warning");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return strcmp(argv[1], "start") == 0 ? child_start() : child(argv[1]);
	self = argv[0];
	tl_need_secretmem();
	hr_module();
	int st = hr_run(argv[0], "default", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "default: %s", tl_status_str(st));
	const char *env[] = { "SECRETMEM_REQUIRE=1", NULL };
	st = hr_run(argv[0], "require", 1, env, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "require: %s", tl_status_str(st));
	for (int k = 0; k < 2; k++) {
		st = tl_run_child(under_filter, (void *)(intptr_t)(k ? ENOSYS : EPERM), out, sizeof(out));
		printf("%s", out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "started under a filter (%s): %s", k ? "ENOSYS" : "EPERM",
			 tl_status_str(st));
	}
	printf("pass\n");
	return 0;
}
