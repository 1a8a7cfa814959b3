/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_map_refused - a secret file's mapping refused at the memory-lock
 * limit leaves the caller's reservation in place (os_map_shared_in).
 *
 * A MAP_FIXED mmap that fails unmaps what was there: memfd_secret's,
 * refused at the limit with EAGAIN, left a hole where the reservation was,
 * another thread's mmap could land in it, and the clean-up that followed
 * (the reservation unmapped whole, or the next MAP_FIXED try of a smaller
 * piece in fork's copy window) destroyed that thread's memory: glibc's free
 * of a large block died of SIGSEGV in heap mode (t_heap_sandbox_tsync as an
 * ordinary user, 5 runs in 60).  Here, in a child without CAP_IPC_LOCK
 * (root drops it; run as an ordinary user, the test is one) under
 * RLIMIT_MEMLOCK 64 KiB: a 1 MiB reservation, a 1 MiB secret file,
 * the mapping refused, and the reservation must still be there, whole and
 * inaccessible; a mapping that fits the limit then works in it.
 *
 * And the mapping that succeeds stays one step: a first version of the fix
 * unmapped the reservation before it mapped the file, and another thread's
 * mmap took the free range (577 of 2,000 region creations failed, with no
 * limit at all).  Here 500 regions of 256 KiB are made while a thread maps
 * and unmaps 256 KiB in a loop: none may fail.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#define LIMIT (64u << 10)
#define LEN ((size_t)1 << 20)

static int reserved_whole(void *addr, size_t len)
{
	char line[512];
	unsigned long lo, hi;
	char perms[8];

	if (tl_maps_line(addr, line, sizeof(line)) != 0)
		return 0;
	if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
		return 0;
	return lo <= (unsigned long)addr && hi >= (unsigned long)addr + len && strncmp(perms, "---", 3) == 0;
}

static int limited(void *arg)
{
	(void)arg;
	/* an ordinary user has no CAP_IPC_LOCK to drop */
	if ((geteuid() == 0 && tl_drop_cap_ipc_lock()) || tl_set_memlock(LIMIT)) {
		printf("cannot drop CAP_IPC_LOCK or set RLIMIT_MEMLOCK\n");
		return 2;
	}
	void *r;
	TL_CHECK(os_reserve(LEN, 4096, &r) == 0, "reserve");
	int fd = sm_memfd_secret();
	TL_CHECK(fd >= 0, "memfd_secret: %s", strerror(-fd));
	TL_CHECK(ftruncate(fd, (off_t)LEN) == 0, "ftruncate: %s", strerror(errno));
	int rc = os_map_shared_in(r, LEN, fd, 0);
	printf("1 MiB secret mapping under a 64 KiB limit: %s\n", rc ? strerror(-rc) : "mapped");
	TL_CHECK(rc == -EAGAIN || rc == -ENOMEM, "the mapping was not refused: %d", rc);
	TL_CHECK(reserved_whole(r, LEN), "the refused mapping left a hole where the reservation was");
	rc = os_map_shared_in(r, 16384, fd, 0);
	TL_CHECK(rc == 0, "16 KiB in the reservation: %s", strerror(-rc));
	memset(r, 0x5a, 16384);
	TL_CHECK(reserved_whole((unsigned char *)r + 16384, LEN - 16384), "the rest of the reservation");
	close(fd);
	printf("the reservation stayed whole; 16 KiB then mapped in it\n");
	return 0;
}

static atomic_int stop;

static void *mapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p = mmap(NULL, 256u << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
			munmap(p, 256u << 10);
	}
	return NULL;
}

static void no_spurious_refusal(void)
{
	pthread_t t;
	int failed = 0, err = 0;

	TL_CHECK(pthread_create(&t, NULL, mapper, NULL) == 0, "pthread_create");
	for (int i = 0; i < 500; i++) {
		struct secretmem_region *r = secretmem_region_create(256u << 10, 0);
		if (!r) {
			failed++;
			err = errno;
		} else {
			secretmem_region_destroy(r);
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("500 regions of 256 KiB while another thread maps and unmaps: %d failed%s%s\n", failed,
	       failed ? ", the last with " : "", failed ? strerror(err) : "");
	TL_CHECK(failed == 0, "region creations failed while another thread mapped memory");
}

int main(void)
{
	static char out[4096];

	tl_need_secretmem();
	if (tl_under_valgrind())
		tl_skip("valgrind: no secret memory to limit");
	/* first: after a fork (the child below) this process's regions no
	 * longer met the race in a scratch copy with the unmapping version */
	no_spurious_refusal();
	if (sm_fault_regime() != SM_REGIME_MMAP)
		tl_skip("this kernel charges secret memory at fault time: its mmap is not refused at the limit");
	int st = tl_run_child(limited, NULL, out, sizeof(out));
	fputs(out, stdout);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		tl_skip("cannot drop CAP_IPC_LOCK or lower RLIMIT_MEMLOCK in a child");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "limited child: %s", tl_status_str(st));
	return TL_PASS;
}
