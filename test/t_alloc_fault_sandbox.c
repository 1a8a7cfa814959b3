/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_sandbox - a sandbox that refuses the regime probe's
 * madvise(MADV_COLD) leaves the regime unknown and the library on the
 * kernel-side fault-in, and never harms the caller.  In three children, a
 * seccomp filter answers madvise(..., MADV_COLD) with EPERM, kills the
 * calling process (the probe's clone child, not the program), or traps
 * (SIGSYS, which kills that child); every other call is allowed.  Then: a
 * 32-byte secret works, the regime is unknown, the probe left no file
 * descriptor and no mapping behind (one secret memory mapping: the chunk's),
 * and 2,000 secrets are faulted in from the kernel side only.
 */
#include <endian.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "internal.h"
#include "tlib.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif

static void *blk[2000];

static int filter_cold(unsigned int action)
{
	/* the low word of the advice argument */
	unsigned off = (unsigned)offsetof(struct seccomp_data, args[2]) + (__BYTE_ORDER == __BIG_ENDIAN ? 4 : 0);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)SYS_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_COLD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
}

/* Lines of /proc/self/maps naming a secret memory file. */
static int secret_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "secretmem") != NULL;
	fclose(f);
	return n;
}

static int sandboxed(void *arg)
{
	unsigned int action = *(unsigned int *)arg;

	tl_no_core();
	int fds = tl_count_fds();
	if (filter_cold(action)) {
		printf("cannot install a seccomp filter\n");
		return 2;
	}
	unsigned char *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc under the filter: %s", strerror(errno));
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_SECRET, "not secret memory under the filter");
	printf("filter action %#x: regime %d, %d fds (%d before), %d secret memory mappings\n", action,
	       sm_fault_regime(), tl_count_fds(), fds, secret_maps());
	TL_CHECK(sm_fault_regime() == SM_REGIME_UNKNOWN, "regime %d with MADV_COLD refused", sm_fault_regime());
	TL_CHECK(tl_count_fds() == fds, "the probe left %d file descriptors open", tl_count_fds() - fds);
	TL_CHECK(secret_maps() == 1, "%d secret memory mappings after one small secret, want 1 (the chunk)",
		 secret_maps());
	size_t t0, k0, t1, k1;
	sm_fault_in_counts(&t0, &k0);
	for (int i = 0; i < 2000; i++) {
		blk[i] = secretmem_malloc(32);
		TL_CHECK(blk[i], "malloc: %s", strerror(errno));
		memset(blk[i], 1, 32);
	}
	sm_fault_in_counts(&t1, &k1);
	printf("2,000 secrets: %zu pages faulted from the kernel side, %zu touched\n", k1 - k0, t1 - t0);
	TL_CHECK(t1 == t0 && k1 > k0, "not the kernel-side fault-in");
	for (int i = 0; i < 2000; i++)
		secretmem_free(blk[i]);
	secretmem_free(p);
	return 0;
}

int main(void)
{
	static const unsigned int actions[] = { SECCOMP_RET_ERRNO | EPERM, SECCOMP_RET_KILL_PROCESS,
						SECCOMP_RET_TRAP };

	if (tl_under_valgrind())
		tl_skip("valgrind runs no clone() child: the regime is not probed under it");
	/* this process never probes: each child starts unprobed */
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		char out[8192];
		unsigned int a = actions[i];
		int st = tl_run_child(sandboxed, &a, out, sizeof(out));

		fputs(out, stdout);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
			tl_skip("cannot install a seccomp filter here");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(out, "not secret memory"))
			tl_need_secretmem();
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "filter action %#x: %s", a, tl_status_str(st));
	}
	printf("ok: a refused probe leaves the regime unknown and the kernel-side fault-in\n");
	return TL_PASS;
}
