/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases_limit.c - the memory-lock limit in both regimes, beyond the
 * `memlock` case of cases.c:
 *   memlock-selftest  the kernel selftest's rule (mainline memfd_secret.c):
 *                     with every capability dropped, a mapping of exactly
 *                     the limit works and one of twice the limit fails;
 *   memlock-touch     the charge-at-touch regime (commit 97d34aa65c29): a
 *                     touch past the limit raises SIGBUS, and the charge
 *                     outlives munmap and a re-mmap (the mm tree's selftest).
 * Each runs where its regime is this kernel's and SKIPs otherwise, saying
 * which regime it found.  The kernel operations go through fake.c, so the
 * charge-at-touch path also runs against a model of that regime
 * (SECRETMEM_CHECK_FAKE_KERNEL=charge-at-touch) in the test suite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "cases.h"

#define LIMIT ((size_t)64 * 1024)

static size_t pagesz(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Drops every capability (bounding set too where allowed); 0 or -errno. */
static int drop_all_caps(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	for (int c = 0; c < 64; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) != 0)
		return -errno;
	return 0;
}

static int set_limit(size_t lim)
{
	struct rlimit rl = { lim, lim };

	return setrlimit(RLIMIT_MEMLOCK, &rl) == 0 ? 0 : -errno;
}

static const char *regime_text(int locked)
{
	return locked == 1 ? "mmap-time regime (VM_LOCKED mapping)" :
	       locked == 0 ? "fault-time regime (no VM_LOCKED)" : "unknown regime";
}

int case_memlock_selftest(struct case_result *r)
{
	unsigned char *m;
	int fd, rc, locked;

	rc = drop_all_caps();
	if (rc < 0 || cli_has_cap_ipc_lock() != 0)
		return case_skip(r, "cannot drop every capability: %s", cli_errno_name(rc < 0 ? -rc : EPERM));
	rc = set_limit(LIMIT);
	if (rc < 0)
		return case_skip(r, "cannot set RLIMIT_MEMLOCK to 64 KiB: %s", cli_errno_name(-rc));
	fd = case_secret_fd(4 * LIMIT, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	m = mmap(NULL, LIMIT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return case_fail(r, "with every capability dropped, a mapping of exactly the 64 KiB limit "
				 "failed with %s", ENAME());
	if (cli_is_secret_mapping(m) != 1)
		return case_fail(r, "the mapping is not a secretmem file");
	locked = cli_mapping_locked(m);
	cli_unmap(m, LIMIT);
	if (locked != 1)
		return case_skip(r, "%s: mmap is not limited there (the newer selftest dropped this rule); "
				 "see memlock-touch", regime_text(locked));
	m = mmap(NULL, 2 * LIMIT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED)
		return case_fail(r, "with every capability dropped, a mapping of twice the 64 KiB limit "
				 "succeeded");
	if (errno != EAGAIN)
		return case_fail(r, "a mapping of twice the limit gave %s, expected EAGAIN", ENAME());
	close(fd);
	return case_pass(r, "with every capability dropped and a 64 KiB limit, a 64 KiB mapping works "
			 "and a 128 KiB one is EAGAIN (the kernel selftest's rule)");
}

/* The stage a toucher child reached, shared with the case. */
struct progress {
	volatile int stage;
	volatile size_t touched;
};

/*
 * A child touching pages [first, first + n) of a fresh 2*LIMIT mapping of
 * fd, then (remap) unmapping, mapping again and touching page `last`.
 * Returns the wait status.
 */
static int toucher(int fd, struct progress *pr, size_t first, size_t n, int remap, size_t last)
{
	size_t page = pagesz();
	pid_t pid;

	pr->stage = 0;
	pr->touched = 0;
	pid = case_spawn();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		unsigned char *m = mmap(NULL, 4 * LIMIT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			_exit(2);
		signal(SIGBUS, SIG_DFL);
		for (size_t i = first; i < first + n; i++) {
			cli_touch(m + i * page);
			pr->touched++;
		}
		pr->stage = 1;
		if (remap) {
			cli_unmap(m, 4 * LIMIT);
			m = mmap(NULL, 4 * LIMIT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				_exit(3);
		}
		pr->stage = 2;
		cli_touch(m + last * page);
		pr->stage = 3;
		_exit(0);
	}
	return cli_wait(pid);
}

int case_memlock_touch(struct case_result *r)
{
	size_t page = pagesz(), npages = LIMIT / page;
	struct progress *pr;
	unsigned char *m;
	int fd, rc, locked, st;

	rc = case_drop_cap_ipc_lock();
	if (rc < 0 && cli_has_cap_ipc_lock() != 0)
		return case_skip(r, "cannot drop CAP_IPC_LOCK: %s", cli_errno_name(-rc));
	rc = set_limit(LIMIT);
	if (rc < 0)
		return case_skip(r, "cannot set RLIMIT_MEMLOCK to 64 KiB: %s", cli_errno_name(-rc));
	fd = case_secret_fd(4 * LIMIT, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return case_fail(r, "a one-page mapping under a 64 KiB limit failed with %s", ENAME());
	if (cli_is_secret_mapping(m) != 1)
		return case_fail(r, "the mapping is not a secretmem file");
	locked = cli_mapping_locked(m);
	cli_unmap(m, page);
	if (locked != 0)
		return case_skip(r, "%s: the limit is checked at mmap (cases memlock, memlock-selftest); "
				 "the charge-at-touch path runs on kernels with commit 97d34aa65c29 "
				 "(and against a fake kernel in the test suite)", regime_text(locked));
	/* the mapping itself is not limited in this regime */
	m = mmap(NULL, 4 * LIMIT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return case_fail(r, "fault-time regime, but a 256 KiB mapping under a 64 KiB limit failed "
				 "with %s", ENAME());
	cli_unmap(m, 4 * LIMIT);
	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pr == MAP_FAILED)
		return case_fail(r, "mmap: %s", ENAME());

	/* 1: the limit's worth of pages, then one more: SIGBUS */
	st = toucher(fd, pr, 0, npages, 0, npages);
	if (st == -1)
		return case_fail(r, "fork: %s", ENAME());
	if (pr->stage < 2)
		return case_fail(r, "touching %zu KiB under a 64 KiB limit stopped after %zu KiB (%s)",
				 (size_t)LIMIT / 1024, pr->touched * page / 1024, cli_status_text(st));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		return case_fail(r, "a touch past the 64 KiB limit: %s, expected SIGBUS",
				 cli_status_text(st));
	/* 2: the charge stays with the pages: a new process touching a charged
	 * page, munmap, mmap again, a new page: still SIGBUS */
	st = toucher(fd, pr, 0, 1, 1, npages + 1);
	if (pr->stage < 2)
		return case_fail(r, "after the first toucher, touching an already charged page or "
				 "re-mapping failed (%s)", cli_status_text(st));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		return case_fail(r, "after munmap and a re-mmap a touch past the limit gave %s: the charge "
				 "did not outlive munmap", cli_status_text(st));
	close(fd);
	return case_pass(r, "fault-time regime%s: without CAP_IPC_LOCK and a 64 KiB limit, 64 KiB of "
			 "touches work and the next is SIGBUS; the charge outlives munmap and a "
			 "re-mmap (the next new page is SIGBUS)",
			 cli_fake_kernel() != CLI_FAKE_NONE ? " (fake kernel)" : "");
}
