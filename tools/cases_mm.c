/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases_mm.c - the conformance cases about the memory manager and secret
 * pages: vmsplice after munmap and re-mmap (the kernel selftest's fourth
 * case), io_uring registered buffers, userfaultfd, mremap, madvise, what
 * /proc/self/pagemap shows (a fact), and memory-cgroup accounting.  See
 * cases.c for how cases are written and run.  io_uring is used through its
 * raw system calls (no liburing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "cases.h"

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static size_t page;

void cases_mm_init(size_t page_size)
{
	page = page_size;
}

/* ---- vmsplice after munmap and re-mmap ------------------------------- */

/* vmsplice of n bytes at p into the pipe: 0 if it worked (drained), or the errno. */
static int try_vmsplice(int p[2], void *buf, size_t n, unsigned char *drain)
{
	struct iovec v = { buf, n };
	ssize_t k = vmsplice(p[1], &v, 1, 0);

	if (k < 0)
		return errno ? errno : EIO;
	if (read(p[0], drain, (size_t)k) != k)
		return EIO;
	return 0;
}

int case_vmsplice_remap(struct case_result *r)
{
	unsigned char *plain = case_plain_map(page), *drain = case_plain_map(page), *m;
	int p[2], fd, err;
	const char *stage[3] = { "a fresh (untouched) page", "a touched page",
				 "a page mapped again after munmap" };

	if (!plain || !drain)
		return case_fail(r, "anonymous mapping: %s", ENAME());
	if (pipe2(p, O_CLOEXEC) != 0)
		return case_fail(r, "pipe: %s", ENAME());
	case_fill(plain, page, SEED_PLAIN);
	err = try_vmsplice(p, plain, page, drain);
	if (err)
		return case_skip(r, "control failed: vmsplice of an ordinary buffer gives %s",
				 cli_errno_name(err));
	fd = case_secret_fd(page, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return case_fail(r, "mmap: %s", ENAME());
	for (int s = 0; s < 3; s++) {
		if (s == 1)
			case_fill(m, page, SEED_SECRET);
		if (s == 2) {
			munmap(m, page);
			m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				return case_fail(r, "mmap again after munmap: %s", ENAME());
			if (m[0] == 0 && m[1] == 0 && m[2] == 0 && m[3] == 0)
				return case_fail(r, "the page mapped again lost its contents");
		}
		err = try_vmsplice(p, m, page, drain);
		if (!err)
			return case_fail(r, "vmsplice of %s of secret memory succeeded", stage[s]);
		if (err != EFAULT)
			return case_fail(r, "vmsplice of %s gave %s, expected EFAULT", stage[s],
					 cli_errno_name(err));
	}
	close(fd);
	return case_pass(r, "vmsplice gives EFAULT for a fresh, a touched and a re-mapped (munmap, mmap) "
			 "secret page; an ordinary buffer works");
}

/* ---- io_uring registered buffers ------------------------------------- */

int case_io_uring(struct case_result *r)
{
	struct io_uring_params params;
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page);
	struct iovec v;
	int ring, err;

	if (!secret || !plain)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	memset(&params, 0, sizeof(params));
	ring = (int)syscall(SYS_io_uring_setup, 1, &params);
	if (ring < 0)
		return case_skip(r, "io_uring_setup: %s%s", ENAME(),
				 errno == EPERM ? " (kernel.io_uring_disabled, or a filter)" : "");
	v = (struct iovec){ plain, page };
	if (syscall(SYS_io_uring_register, ring, IORING_REGISTER_BUFFERS, &v, 1) != 0) {
		err = errno;
		close(ring);
		return case_skip(r, "control failed: registering an ordinary buffer gives %s",
				 cli_errno_name(err));
	}
	if (syscall(SYS_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0) != 0) {
		err = errno;
		close(ring);
		return case_skip(r, "IORING_UNREGISTER_BUFFERS: %s", cli_errno_name(err));
	}
	v = (struct iovec){ secret, page };
	errno = 0;
	if (syscall(SYS_io_uring_register, ring, IORING_REGISTER_BUFFERS, &v, 1) == 0) {
		close(ring);
		return case_fail(r, "IORING_REGISTER_BUFFERS of a secret buffer succeeded: its pages "
				 "were pinned for the kernel");
	}
	err = errno;
	close(ring);
	return case_pass(r, "IORING_REGISTER_BUFFERS of a secret buffer fails with %s; an ordinary "
			 "buffer registers", cli_errno_name(err));
}

/* ---- userfaultfd ----------------------------------------------------- */

static int uffd_register(int uffd, void *p, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0)
		return errno ? errno : EIO;
	struct uffdio_range range = { (uintptr_t)p, len };
	ioctl(uffd, UFFDIO_UNREGISTER, &range);
	return 0;
}

int case_userfaultfd(struct case_result *r)
{
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page);
	struct uffdio_api api;
	int uffd, err;

	if (!secret || !plain)
		return case_fail(r, "mapping: %s", ENAME());
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 && errno == EPERM)
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		return case_skip(r, "userfaultfd: %s%s", ENAME(),
				 errno == EPERM ? " (vm.unprivileged_userfaultfd=0)" : "");
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	if (ioctl(uffd, UFFDIO_API, &api) != 0) {
		err = errno;
		close(uffd);
		return case_skip(r, "UFFDIO_API: %s", cli_errno_name(err));
	}
	err = uffd_register(uffd, plain, page);
	if (err) {
		close(uffd);
		return case_skip(r, "control failed: registering an ordinary range gives %s",
				 cli_errno_name(err));
	}
	err = uffd_register(uffd, secret, page);
	close(uffd);
	if (!err)
		return case_fail(r, "UFFDIO_REGISTER of a secret range succeeded: its faults could be "
				 "served from user space");
	if (err != EINVAL)
		return case_fail(r, "UFFDIO_REGISTER of a secret range gave %s, expected EINVAL",
				 cli_errno_name(err));
	return case_pass(r, "UFFDIO_REGISTER (missing mode) of a secret range gives EINVAL; an "
			 "ordinary range registers");
}

/* ---- mremap ---------------------------------------------------------- */

int case_mremap(struct case_result *r)
{
	unsigned char *m, *g, *mv, *target, *check;
	int fd, st;

	fd = case_secret_fd(2 * page, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	check = case_plain_map(page);
	if (m == MAP_FAILED || !check)
		return case_fail(r, "mmap: %s", ENAME());
	close(fd);
	case_fill(m, page, SEED_SECRET);
	case_fill(check, page, SEED_SECRET);
	g = mremap(m, page, 3 * page, MREMAP_MAYMOVE);
	if (g == MAP_FAILED)
		return case_fail(r, "growing a secret mapping from 1 to 3 pages failed with %s", ENAME());
	if (memcmp(g, check, page) != 0)
		return case_fail(r, "the grown mapping lost its contents");
	if (cli_is_secret_mapping(g) != 1 || cli_is_secret_mapping(g + 2 * page) != 1)
		return case_fail(r, "the grown mapping is not a mapping of the secretmem file");
	g[page] = 0x77; /* inside the file's two pages */
	pid_t pid = case_spawn();
	if (pid < 0)
		return case_fail(r, "fork: %s", ENAME());
	if (pid == 0) {
		signal(SIGBUS, SIG_DFL);
		*(volatile unsigned char *)(g + 2 * page) = 1; /* past the file's end */
		_exit(3);
	}
	st = cli_wait(pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		return case_fail(r, "touching the grown mapping past the file's end: %s, expected SIGBUS",
				 cli_status_text(st));
	target = mmap(NULL, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (target == MAP_FAILED)
		return case_fail(r, "mmap: %s", ENAME());
	mv = mremap(g, 3 * page, 3 * page, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	if (mv == MAP_FAILED)
		return case_fail(r, "moving the secret mapping (MREMAP_FIXED) failed with %s", ENAME());
	if (memcmp(mv, check, page) != 0 || mv[page] != 0x77)
		return case_fail(r, "the moved mapping lost its contents");
	if (cli_is_secret_mapping(mv) != 1)
		return case_fail(r, "the moved mapping is not a mapping of the secretmem file");
	if (cli_is_secret_mapping(g) == 1)
		return case_fail(r, "the old address still maps the secretmem file after the move");
	return case_pass(r, "mremap grows a secret mapping (contents kept, past the file's end "
			 "SIGBUS) and moves it (MREMAP_FIXED; the old address is unmapped)");
}

/* ---- madvise --------------------------------------------------------- */

int case_madvise(struct case_result *r)
{
	static const struct {
		int advice;
		const char *name;
	} adv[] = {
		{ MADV_MERGEABLE, "MADV_MERGEABLE" }, { MADV_HUGEPAGE, "MADV_HUGEPAGE" },
		{ MADV_FREE, "MADV_FREE" },           { MADV_COLD, "MADV_COLD" },
		{ MADV_PAGEOUT, "MADV_PAGEOUT" },
	};
	const size_t n = 4 * page;
	unsigned char *m = cli_secret_map(n), *check = case_plain_map(n);
	char seen[320], flags[256];
	size_t used = 0;

	if (!m || !check)
		return case_fail(r, "mapping: %s", ENAME());
	if (cli_is_secret_mapping(m) != 1)
		return case_fail(r, "the mapping is not a secretmem file");
	case_fill(m, n, SEED_SECRET);
	case_fill(check, n, SEED_SECRET);
	seen[0] = '\0';
	for (size_t i = 0; i < sizeof(adv) / sizeof(adv[0]); i++) {
		errno = 0;
		int rc = madvise(m, n, adv[i].advice);
		const char *what = rc == 0 ? "ok" : ENAME();
		used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s %s", used ? ", " : "",
					 adv[i].name, what);
		if (used >= sizeof(seen))
			used = sizeof(seen) - 1;
		if (memcmp(m, check, n) != 0)
			return case_fail(r, "after %s (%s) the secret pages lost their contents", adv[i].name,
					 what);
		if (adv[i].advice == MADV_MERGEABLE && cli_vmflags_of(m, flags, sizeof(flags)) == 0 &&
		    cli_has_word(flags, "mg"))
			return case_fail(r, "MADV_MERGEABLE marked the secret mapping mergeable (VmFlags mg): "
					 "KSM may share its pages");
	}
	if (cli_is_secret_mapping(m) != 1)
		return case_fail(r, "the mapping is no longer the secretmem file");
	return case_pass(r, "%s; contents kept, never mergeable (no mg in VmFlags)", seen);
}

/* ---- pagemap (a fact) ------------------------------------------------ */

/* The pagemap entry of p, or 0 with *err set. */
static uint64_t pagemap_entry(const void *p, int *err)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t e = 0;

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return 0;
	}
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / page * sizeof(e))) != (ssize_t)sizeof(e))
		*err = errno ? errno : EIO;
	close(fd);
	return e;
}

int case_pagemap(struct case_result *r)
{
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page);
	uint64_t es, ep;
	int err;

	if (!secret || !plain)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	es = pagemap_entry(secret, &err);
	if (err)
		return case_skip(r, "/proc/self/pagemap: %s", cli_errno_name(err));
	ep = pagemap_entry(plain, &err);
	const uint64_t present = 1ull << 63, pfn_mask = (1ull << 55) - 1;
	if (!(es & present))
		return case_info(r, "pagemap does not show the touched secret page as present "
				 "(entry 0x%llx)", (unsigned long long)es);
	if ((es & pfn_mask) == 0)
		return case_info(r, "pagemap shows the touched secret page as present but hides its "
				 "frame number (no CAP_SYS_ADMIN)");
	return case_info(r, "pagemap shows the touched secret page as present with its frame number "
			 "(PFN 0x%llx; an ordinary page: 0x%llx) to this %s process: where the page "
			 "is in RAM, not what it holds", (unsigned long long)(es & pfn_mask),
			 (unsigned long long)(ep & pfn_mask), geteuid() == 0 ? "root" : "privileged");
}

/* ---- memory cgroup accounting ---------------------------------------- */

/* The mount point of the cgroup v2 hierarchy (v2 != 0) or of the v1
 * hierarchy with the memory controller; 0 or -ENOENT. */
static int cgroup_mount(int v2, char *mnt, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char point[512], *dash = strstr(line, " - ");
		char fstype[64], source[256], opts[512];
		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", point) != 1)
			continue;
		opts[0] = '\0';
		if (sscanf(dash + 3, "%63s %255s %511s", fstype, source, opts) < 2)
			continue;
		if (v2 ? strcmp(fstype, "cgroup2") == 0 :
			 (strcmp(fstype, "cgroup") == 0 && strstr(opts, "memory"))) {
			snprintf(mnt, size, "%s", point);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* This process's cgroup path in hierarchy "0" (v2) or "memory" (v1). */
static int cgroup_path(int v2, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*a = *b = '\0';
		b[1 + strcspn(b + 1, "\n")] = '\0';
		int match = v2 ? strcmp(line, "0") == 0 && a[1] == '\0' :
				 cli_has_word(a + 1, "memory") || strstr(a + 1, "memory") != NULL;
		if (match) {
			snprintf(path, size, "%s", b + 1);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

static long long read_ll(const char *path)
{
	char buf[64];

	if (cli_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	int err = errno;
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -err;
}

#define MEMCG_BYTES (1u << 20)

int case_memcg(struct case_result *r)
{
	char mnt[512], cg[512], dir[1200], file[1300], why[900];
	const char *usage_file;
	int v2 = 1, p[2];
	long long delta[1] = { -1 };

	if (geteuid() != 0)
		return case_skip(r, "creating a child memory cgroup needs root");
	/* root without CAP_IPC_LOCK (a bounding set without it) meets its
	 * memory-lock limit like anyone: the 1 MiB mapping must fit in it */
	struct rlimit ml;
	if (cli_has_cap_ipc_lock() == 0 && getrlimit(RLIMIT_MEMLOCK, &ml) == 0 && ml.rlim_cur != RLIM_INFINITY &&
	    ml.rlim_cur < 2 * (rlim_t)MEMCG_BYTES)
		return case_skip(r, "without CAP_IPC_LOCK the memory-lock limit (%llu bytes) leaves no room for "
				 "the case's %u-byte mapping", (unsigned long long)ml.rlim_cur, MEMCG_BYTES);
	/* cgroup v2: a child of the root cgroup, if the root delegates memory
	 * (a child of our own cgroup would break the no-internal-process rule) */
	if (cgroup_mount(1, mnt, sizeof(mnt)) == 0) {
		char ctl[200];
		snprintf(file, sizeof(file), "%s/cgroup.subtree_control", mnt);
		if (cli_read_file(file, ctl, sizeof(ctl)) >= 0 && cli_has_word(ctl, "memory")) {
			snprintf(dir, sizeof(dir), "%s/secretmem-check-%d", mnt, (int)getpid());
			usage_file = "memory.current";
			goto found;
		}
		snprintf(why, sizeof(why), "cgroup v2 at %s does not delegate the memory controller "
			 "(cgroup.subtree_control: \"%s\")", mnt, ctl);
	} else {
		snprintf(why, sizeof(why), "no cgroup v2 mount");
	}
	v2 = 0;
	if (cgroup_mount(0, mnt, sizeof(mnt)) != 0 || cgroup_path(0, cg, sizeof(cg)) != 0)
		return case_skip(r, "%s, and no cgroup v1 memory hierarchy", why);
	snprintf(dir, sizeof(dir), "%s%s/secretmem-check-%d", mnt, strcmp(cg, "/") == 0 ? "" : cg,
		 (int)getpid());
	usage_file = "memory.usage_in_bytes";
found:
	if (mkdir(dir, 0700) != 0)
		return case_skip(r, "cannot create the child cgroup %s: %s", dir, ENAME());
	if (pipe2(p, O_CLOEXEC) != 0) {
		rmdir(dir);
		return case_fail(r, "pipe: %s", ENAME());
	}
	pid_t pid = case_spawn();
	if (pid == 0) {
		long long before, after, d = -2;
		unsigned char *m;
		close(p[0]);
		snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
		if (write_str(file, "0") == 0) {
			snprintf(file, sizeof(file), "%s/%s", dir, usage_file);
			m = cli_secret_map(MEMCG_BYTES);
			before = read_ll(file);
			d = -3;
			if (m && cli_is_secret_mapping(m) == 1) {
				for (size_t off = 0; off < MEMCG_BYTES; off += page)
					m[off] = 1;
				after = read_ll(file);
				d = before < 0 || after < 0 ? -4 : after - before;
			}
		}
		if (write(p[1], &d, sizeof(d)) != (ssize_t)sizeof(d))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], delta, sizeof(delta)) != (ssize_t)sizeof(delta))
		delta[0] = -5;
	close(p[0]);
	if (pid > 0)
		cli_wait(pid);
	for (int i = 0; i < 50 && rmdir(dir) != 0 && errno == EBUSY; i++)
		usleep(20000);
	if (delta[0] == -2)
		return case_skip(r, "cannot move a process into the child cgroup %s", dir);
	if (delta[0] == -3)
		return case_fail(r, "no secret mapping of 1 MiB in the child cgroup");
	if (delta[0] < 0)
		return case_fail(r, "cannot read %s of the child cgroup", usage_file);
	if (delta[0] < (long long)MEMCG_BYTES * 3 / 4)
		return case_fail(r, "touching 1 MiB of secret memory raised the child cgroup's %s by only "
				 "%lld KiB: the pages are not charged to the memory cgroup", usage_file,
				 delta[0] / 1024);
	return case_pass(r, "touching 1 MiB of secret memory in a child memory cgroup (v%d) raised "
			 "%s by %lld KiB", v2 ? 2 : 1, usage_file, delta[0] / 1024);
}
