/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_inject - failures injected into the OS layer become clean errors.
 *
 * The newer-kernel memory-lock regime (a page whose charge is refused at
 * fault time: the kernel-side fault-in fails with EFAULT) cannot happen on
 * our kernel, so it is injected (OS_OP_FAULT_IN): creation must return NULL
 * with ENOMEM, leave no mapping and no fd behind, and the next creation must
 * work.  Likewise the older regime (mmap refused with EAGAIN, at the
 * reservation or at the secret mapping), a failing ftruncate, and
 * memfd_secret failing with ENOSYS/EPERM (fallback unless required), and
 * the fallback backend's mlock refused.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "secretmem.h"
#include "tlib.h"

#define LEN (4 * 4096)

static int maps0, fds0;

static void baseline(void)
{
	maps0 = tl_maps_count();
	fds0 = tl_count_fds();
}

static void no_leak(const char *what)
{
	int maps = tl_maps_count(), fds = tl_count_fds();

	TL_CHECK(maps == maps0, "%s: %d mappings after the failure, %d before", what, maps, maps0);
	TL_CHECK(fds == fds0, "%s: %d fds after the failure, %d before", what, fds, fds0);
}

static void works(const char *what, int backend)
{
	struct secretmem_region *r = secretmem_region_create(LEN, 0);

	TL_CHECK(r != NULL, "%s: the next creation failed: %s", what, strerror(errno));
	TL_CHECK(secretmem_region_backend(r) == backend, "%s: next region backend %s", what,
		 secretmem_backend_name(secretmem_region_backend(r)));
	unsigned char *d = secretmem_region_data(r);
	for (size_t i = 0; i < LEN; i++)
		TL_CHECK(d[i] == 0, "%s: next region not zero", what);
	tl_fill(d, LEN, 9);
	TL_CHECK(tl_check(d, LEN, 9), "%s: next region does not hold data", what);
	int rc = secretmem_region_destroy(r);
	TL_CHECK(rc == 0, "%s: destroy: %s", what, strerror(-rc));
}

/* Arm op to fail with err on its nth call; creation must fail with want. */
static void expect_failure(const char *what, int op, long nth, int err, unsigned int flags, int want)
{
	baseline();
	sm_inject_fault(op, nth, err, 0);
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(LEN, flags);
	long calls = sm_inject_count(op);
	sm_inject_fault(op, 0, 0, 0);
	TL_CHECK(r == NULL, "%s: creation succeeded (backend %s)", what,
		 secretmem_backend_name(secretmem_region_backend(r)));
	TL_CHECK(errno == want, "%s: errno %s, want %s", what, strerror(errno), strerror(want));
	TL_CHECK(calls >= nth, "%s: the injected operation was reached %ld times, want >= %ld", what, calls, nth);
	no_leak(what);
	printf("%s: NULL/%s, nothing leaked\n", what, strerror(want));
}

int main(void)
{
	tl_need_secretmem();

	/* settle malloc, stdio and the fork handlers before counting */
	works("warm-up", SECRETMEM_BACKEND_SECRET);
	baseline();

	/* newer kernels: the fault-time charge refused inside the kernel */
	expect_failure("fault-in EFAULT", OS_OP_FAULT_IN, 1, EFAULT, 0, ENOMEM);
	works("after fault-in EFAULT", SECRETMEM_BACKEND_SECRET);
	expect_failure("fault-in ENOMEM", OS_OP_FAULT_IN, 1, ENOMEM, 0, ENOMEM);
	expect_failure("fault-in EFAULT, secret required", OS_OP_FAULT_IN, 1, EFAULT,
		       SECRETMEM_REGION_REQUIRE_SECRET, ENOMEM);

	/* persistent: every creation fails until disarmed */
	baseline();
	sm_inject_fault(OS_OP_FAULT_IN, 1, EFAULT, 1);
	for (int i = 0; i < 3; i++) {
		errno = 0;
		struct secretmem_region *r = secretmem_region_create(LEN, 0);
		TL_CHECK(r == NULL && errno == ENOMEM, "persistent fault-in EFAULT, try %d: %p errno %d", i,
			 (void *)r, errno);
	}
	sm_inject_fault(OS_OP_FAULT_IN, 0, 0, 0);
	no_leak("persistent fault-in EFAULT");
	works("after persistent fault-in EFAULT", SECRETMEM_BACKEND_SECRET);

	/* older kernels: mmap refused with EAGAIN at the memory-lock limit,
	 * at the reservation (1st mmap) or at the secret mapping (2nd) */
	expect_failure("reservation mmap EAGAIN", OS_OP_MMAP, 1, EAGAIN, 0, ENOMEM);
	expect_failure("secret mmap EAGAIN", OS_OP_MMAP, 2, EAGAIN, 0, ENOMEM);
	expect_failure("secret mmap ENOMEM", OS_OP_MMAP, 2, ENOMEM, 0, ENOMEM);
	expect_failure("ftruncate ENOMEM", OS_OP_FTRUNCATE, 1, ENOMEM, 0, ENOMEM);
	works("after mmap failures", SECRETMEM_BACKEND_SECRET);

	/* memfd_secret refused after the probe: fallback unless required */
	expect_failure("memfd ENOSYS, secret required", OS_OP_MEMFD, 1, ENOSYS, SECRETMEM_REGION_REQUIRE_SECRET,
		       ENOSYS);
	expect_failure("memfd EPERM, secret required", OS_OP_MEMFD, 1, EPERM, SECRETMEM_REGION_REQUIRE_SECRET,
		       EPERM);
	baseline();
	sm_inject_fault(OS_OP_MEMFD, 1, ENOSYS, 1);
	works("memfd ENOSYS", SECRETMEM_BACKEND_FALLBACK);
	sm_inject_fault(OS_OP_MEMFD, 1, EPERM, 1);
	works("memfd EPERM", SECRETMEM_BACKEND_FALLBACK);
	/* the fallback backend's mlock refused at the limit */
	expect_failure("fallback mlock EAGAIN", OS_OP_FAULT_IN, 1, EAGAIN, 0, ENOMEM);
	expect_failure("fallback mlock ENOMEM", OS_OP_FAULT_IN, 1, ENOMEM, 0, ENOMEM);
	expect_failure("fallback mmap EAGAIN", OS_OP_MMAP, 2, EAGAIN, 0, ENOMEM);
	sm_inject_fault(OS_OP_MEMFD, 0, 0, 0);
	works("memfd again", SECRETMEM_BACKEND_SECRET);
	no_leak("all");
	printf("memfd ENOSYS/EPERM: fallback regions; required: NULL with the errno\n");
	return TL_PASS;
}
