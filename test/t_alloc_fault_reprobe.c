/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fault_reprobe - a regime probe that fails for a passing reason is
 * made again by a later memfd_secret call.  In a child without CAP_IPC_LOCK
 * whose locked memory already fills RLIMIT_MEMLOCK (64 KiB, mlock), the
 * first probe's one-page mapping is refused (EAGAIN, on a kernel that
 * charges secret memory at mmap time): the regime stays unknown and new
 * pages would be faulted from the kernel side.  Once the memory is
 * unlocked, the next allocation's memfd_secret call probes again and finds
 * the mmap-time regime: its chunk is lazy (its page is left to the
 * program's first write, not faulted in from the kernel side).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "internal.h"
#include "tlib.h"

#define LIMIT (64 << 10)

/* Exit code: the probed regime (a fresh child probes on its first call). */
static int probe_only(void *arg)
{
	(void)arg;
	return secretmem_supported() == 0 ? sm_fault_regime() : 100;
}

static int reprobe(void *arg)
{
	(void)arg;
	if (tl_drop_cap_ipc_lock() || tl_set_memlock(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	void *locked = mmap(NULL, LIMIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TL_CHECK(locked != MAP_FAILED, "mmap: %s", strerror(errno));
	/* the raw call: AddressSanitizer's mlock() locks nothing */
	TL_CHECK(syscall(SYS_mlock, locked, (size_t)LIMIT) == 0, "mlock of the whole limit: %s", strerror(errno));
	TL_CHECK(secretmem_supported() == 0, "secret memory at the memory-lock limit: not supported");
	printf("at the limit: regime %d after the first memfd_secret call\n", sm_fault_regime());
	TL_CHECK(sm_fault_regime() == SM_REGIME_UNKNOWN, "the probe answered %d with no room for its page",
		 sm_fault_regime());
	TL_CHECK(syscall(SYS_munlock, locked, (size_t)LIMIT) == 0, "munlock: %s", strerror(errno));

	size_t t0, k0, t1, k1;
	sm_fault_in_counts(&t0, &k0);
	void *p = secretmem_malloc(32);
	TL_CHECK(p, "malloc after munlock: %s", strerror(errno));
	sm_fault_in_counts(&t1, &k1);
	printf("after munlock: regime %d; the first page: %zu touched, %zu from the kernel side\n",
	       sm_fault_regime(), t1 - t0, k1 - k0);
	TL_CHECK(sm_fault_regime() == SM_REGIME_MMAP, "no new probe: regime %d", sm_fault_regime());
	/* the new chunk is lazy: its page faults at the program's write */
	TL_CHECK(t1 == t0 && k1 == k0, "the library faulted the first page in");
	memset(p, 0x5a, 32);
	secretmem_free(p);
	return 0;
}

int main(void)
{
	char out[8192];

	tl_need_root("drops CAP_IPC_LOCK in a child");
	if (tl_under_valgrind())
		tl_skip("valgrind runs no clone() child: the regime is not probed under it");
	/* this process never probes: each child starts unprobed */
	int st = tl_run_child(probe_only, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st), "probe child: %s", tl_status_str(st));
	if (WEXITSTATUS(st) == 100)
		tl_need_secretmem();
	if (WEXITSTATUS(st) != SM_REGIME_MMAP)
		tl_skip("the kernel does not charge secret memory at mmap time: a probe is not refused by the limit");
	st = tl_run_child(reprobe, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		tl_skip("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK here");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "re-probe child: %s", tl_status_str(st));
	printf("ok: a probe refused by the memory-lock limit is made again later\n");
	return TL_PASS;
}
