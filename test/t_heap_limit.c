/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_limit - the memory-lock limit under the heap module.  Default: one
 * warning naming the limit and the secret bytes in use, the program goes on
 * in ordinary memory (every block usable; counted in the figures page);
 * once a secret block is freed, new blocks are secret again.
 * A block returned leaves errno alone (a failed secret attempt before a plain
 * block must not show: Python reported ENOENT as ENOMEM).
 * SECRETMEM_REQUIRE=1: malloc returns NULL with ENOMEM instead, no block
 * in ordinary memory, and the module's one warning says so (there was no
 * word at all once the library's hint was left to the module).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "heaprig.h"
#include "tlib.h"

#define N 12000 /* 12000 * 256 bytes: 3 MiB, beyond the limit */

static int child(const char *mode)
{
	static char *blk[N];
	int secret = 0, plain = 0, failed = 0;

	TL_CHECK(hr_active(), "the heap module is not active");
	TL_CHECK(tl_drop_cap_ipc_lock() == 0, "drop CAP_IPC_LOCK");
	TL_CHECK(tl_set_memlock(2 << 20) == 0, "set RLIMIT_MEMLOCK");
	for (int i = 0; i < N; i++) {
		errno = EILSEQ; /* a block returned leaves errno alone, as glibc's malloc */
		blk[i] = malloc(256);
		if (!blk[i]) {
			TL_CHECK(errno == ENOMEM, "errno %d", errno);
			failed++;
			continue;
		}
		TL_CHECK(errno == EILSEQ, "block %d returned with errno %d (%s)", i, errno, strerror(errno));
		memset(blk[i], i & 0xff, 256);
		if (hr_where(blk[i]) == 's')
			secret++;
		else
			plain++;
	}
	for (int i = 0; i < N; i++)
		TL_CHECK(!blk[i] || (blk[i][0] == (char)(i & 0xff) && blk[i][255] == (char)(i & 0xff)), "block %d", i);
	struct sm_heap_stats st;
	TL_CHECK(hr_stats(0, &st) == 0, "figures page");
	printf("secret %d plain %d failed %d; figures: plain %llu bytes in %llu blocks, refusals %llu, secret %llu\n",
	       secret, plain, failed, (unsigned long long)st.plain_bytes, (unsigned long long)st.plain_blocks,
	       (unsigned long long)st.refusals, (unsigned long long)st.secret_bytes);
	TL_CHECK(secret > 1000 && secret < N, "too few secret blocks before the limit");
	if (strcmp(mode, "require") == 0) {
		TL_CHECK(failed > 0 && plain == 0 && st.plain_blocks == 0, "require: blocks in ordinary memory");
	} else {
		TL_CHECK(failed == 0 && plain > 0, "default: a malloc failed, or nothing went to ordinary memory");
		TL_CHECK(st.plain_blocks >= (unsigned long long)plain && st.refusals >= (unsigned long long)plain &&
			 st.plain_bytes >= 256ull * (unsigned long long)plain, "figures");
		TL_CHECK(st.warn_limit == 2 << 20, "warn_limit %llu", (unsigned long long)st.warn_limit);
		/* a secret block freed: the next one is secret again */
		int k = 0;
		while (hr_where(blk[k]) != 's')
			k++;
		free(blk[k]);
		char *again = malloc(256);
		TL_CHECK(again && hr_where(again) == 's', "not secret again after a secret free");
		/* refused again: the failed secret attempt must not show in errno */
		errno = EILSEQ;
		char *more = malloc(256);
		TL_CHECK(more && hr_where(more) != 's', "a second secret block past the limit");
		TL_CHECK(errno == EILSEQ, "plain block after a retry returned with errno %d (%s)", errno, strerror(errno));
	}
	printf("child ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	char out[16384];

	if (argc > 1)
		return child(argv[1]);
	tl_need_secretmem();
	tl_need_root("drops CAP_IPC_LOCK to test the memory-lock limit");
	hr_module();
	int st = hr_run(argv[0], "default", 1, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "default: %s", tl_status_str(st));
	const char *line = "secretmem-heap: warning: secret memory refused (cause: memory-lock limit; RLIMIT_MEMLOCK 2097152 bytes; in use: ";
	char *w = strstr(out, line);
	TL_CHECK(w, "no warning with the figures");
	TL_CHECK(!strstr(w + 1, "secretmem-heap: warning"), "more than one warning");
	TL_CHECK(!strstr(out, "secretmem: warning"), "the library's hint besides the module's warning");
	const char *env[] = { "SECRETMEM_REQUIRE=1", NULL };
	st = hr_run(argv[0], "require", 1, env, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "child ok"), "require: %s", tl_status_str(st));
	w = strstr(out, "secretmem-heap: warning: secret memory refused (cause: memory-lock limit; RLIMIT_MEMLOCK "
			"2097152 bytes; in use: ");
	TL_CHECK(w && strstr(w, "malloc fails with ENOMEM while it is refused (SECRETMEM_REQUIRE=1)\n"),
		 "require: no warning that malloc fails");
	TL_CHECK(w && !strstr(w + 1, "secretmem-heap: warning") && !strstr(out, "secretmem: warning"),
		 "require: more than one warning");
	printf("pass\n");
	return 0;
}
