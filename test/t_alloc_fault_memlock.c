/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_memlock - at the memory-lock limit, allocating ends in
 * NULL/ENOMEM, never in SIGBUS, whichever way new pages are faulted in.  In
 * a child without CAP_IPC_LOCK under RLIMIT_MEMLOCK 64 KiB (one per case),
 * 32-byte secrets, 3,000-byte or 40 KiB blocks, or 8 KiB regions are
 * allocated (and written) until one is refused, with the regime forced to fault-time (kernel-side
 * fault-in, with look-ahead) and, on a kernel that charges secret memory at
 * mmap time, to mmap-time (blocks left to the program's first write, regions
 * touched whole from user space).  A user-space first touch is only ever
 * left on such a kernel: on one that charges at fault time it would raise
 * SIGBUS here, which is why the library probes the regime.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include "internal.h"
#include "tlib.h"

#define LIMIT (64 << 10)

/* Blocks of size bytes (size 0: regions of 8 KiB) until one is refused;
 * its errno. */
static int fill(size_t size, int *count)
{
	for (*count = 0; *count < 1000000; (*count)++) {
		errno = 0;
		struct secretmem_region *r = size ? NULL : secretmem_region_create(8192, 0);
		unsigned char *p = size ? secretmem_malloc(size) : r ? secretmem_region_data(r) : NULL;
		if (!p)
			return errno;
		memset(p, 0x5a, size ? size : 8192); /* written, like a program would */
	}
	return 0;
}

struct job {
	int regime;
	size_t size;
};

static int limited(void *arg)
{
	const struct job *j = arg;

	tl_signal_default(SIGBUS);
	tl_no_core();
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	sm_fault_regime_force(j->regime);
	size_t t0, k0, t1, k1;
	sm_fault_in_counts(&t0, &k0);
	int n, err = fill(j->size, &n);
	sm_fault_in_counts(&t1, &k1);
	printf("regime %d: %d %s of %zu bytes, then %s; %zu pages touched, %zu faulted from the kernel side\n",
	       j->regime, n, j->size ? "blocks" : "regions", j->size ? j->size : 8192,
	       err ? strerror(err) : "no refusal", t1 - t0, k1 - k0);
	TL_CHECK(err == ENOMEM, "blocks of %zu bytes under a 64 KiB limit: errno %d, want ENOMEM", j->size, err);
	TL_CHECK(n > 0, "not one block of %zu bytes under a 64 KiB limit", j->size);
	/* mmap-time: blocks are lazy (the program's writes fault them, no
	 * fault-in), regions are touched whole at creation */
	TL_CHECK(j->regime == SM_REGIME_MMAP ? k1 == k0 && (j->size ? t1 == t0 : t1 > t0) : t1 == t0 && k1 > k0,
		 "the wrong fault-in path ran");
	return 0;
}

static void run(int regime)
{
	static const size_t sizes[] = { 32, 3000, 40 << 10, 0 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char out[8192];
		struct job j = { regime, sizes[i] };
		int st = tl_run_child(limited, &j, out, sizeof(out));

		fputs(out, stdout);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
			tl_skip("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK here");
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "regime %d, %zu-byte blocks at the memory-lock limit: %s%s",
			 regime, sizes[i], tl_status_str(st), WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS ? " (SIGBUS)" : "");
	}
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK in a child");
	tl_need_secretmem();
	run(SM_REGIME_FAULT);
	if (sm_fault_regime() == SM_REGIME_MMAP) {
		run(SM_REGIME_MMAP);
		printf("ok: ENOMEM at the limit, never SIGBUS, in both fault-in modes\n");
	} else {
		printf("ok: ENOMEM at the limit with the kernel-side fault-in (the kernel does not charge at "
		       "mmap time: the user-space touch is not tried)\n");
	}
	return TL_PASS;
}
