/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_probe_first - the first creation of a process is its own support
 * probe (secretmem_supported(3)): the first secretmem_malloc() makes one
 * memfd_secret call, not a probe and then the chunk's call.  A success
 * caches nothing, so the next secretmem_supported() probes (once: the one
 * after it answers from the cache); a refusal met by the first creation (a
 * filter installed before any call) is cached at once, and the allocation
 * uses the fallback.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "internal.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static int first_success(void *arg)
{
	(void)arg;
	TL_CHECK(sm_memfd_calls() == 0, "a fresh child already made %d calls", sm_memfd_calls());
	void *p = secretmem_malloc(32);
	TL_CHECK(p, "secretmem_malloc: %s", strerror(errno));
	int n1 = sm_memfd_calls();
	printf("first allocation: %d memfd_secret call(s)\n", n1);
	TL_CHECK(n1 == 1, "the first allocation made %d memfd_secret calls, not 1", n1);
	int s = secretmem_supported();
	int n2 = sm_memfd_calls();
	printf("secretmem_supported() = %d after %d call(s)\n", s, n2);
	if (s != 0)
		return 100; /* no secret memory here: the caller skips */
	TL_CHECK(n2 == 2, "the first secretmem_supported() after a creation made %d calls, not one probe", n2 - n1);
	TL_CHECK(secretmem_supported() == 0, "a second secretmem_supported() changed its answer");
	TL_CHECK(sm_memfd_calls() == 2, "the second secretmem_supported() probed again (%d calls)", sm_memfd_calls());
	void *q = secretmem_malloc(64);
	TL_CHECK(q && sm_memfd_calls() == 2, "a second small allocation made a memfd_secret call");
	secretmem_free(q);
	secretmem_free(p);
	return 0;
}

static int first_refused(void *arg)
{
	(void)arg;
	TL_CHECK(tl_seccomp_block(SYS_memfd_secret, EPERM) == 0, "cannot install the seccomp filter");
	void *p = secretmem_malloc(32);
	TL_CHECK(p, "secretmem_malloc under the filter (fallback allowed): %s", strerror(errno));
	int n1 = sm_memfd_calls();
	TL_CHECK(n1 == 1, "the first allocation made %d memfd_secret calls, not 1", n1);
	int s = secretmem_supported();
	printf("under an EPERM filter: secretmem_supported() = %d after %d call(s)\n", s, sm_memfd_calls());
	TL_CHECK(s == -EPERM, "secretmem_supported() = %d, not -EPERM", s);
	TL_CHECK(sm_memfd_calls() == 1, "the refusal met by the creation was not cached (%d calls)", sm_memfd_calls());
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0, "secretmem_stats");
	TL_CHECK(st.fallback_bytes > 0 && st.secret_bytes == 0, "the allocation is not in the fallback: secret %zu, fallback %zu",
		 st.secret_bytes, st.fallback_bytes);
	secretmem_free(p);
	return 0;
}

int main(void)
{
	char out[4096];

	if (tl_under_valgrind())
		tl_skip("valgrind makes the call in-process and refuses it: nothing to count");
	int st = tl_run_child(first_success, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 100)
		tl_need_secretmem();
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "success child: %s", tl_status_str(st));
	st = tl_run_child(first_refused, NULL, out, sizeof(out));
	fputs(out, stdout);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "refusal child: %s", tl_status_str(st));
	printf("ok: the first creation is the probe; a refusal it meets is cached\n");
	return TL_PASS;
}
