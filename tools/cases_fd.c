/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases_fd.c - the conformance cases about the secret memory file itself as
 * a way in: re-opening it through /proc/PID/fd and /proc/PID/map_files
 * (refused), taking a process's open fd with pidfd_getfd(2) (a fact of the
 * kernel: it works while the fd is open), and libsecretmem's promise that
 * no fd stays open.  See cases.c for how cases are written and run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"
#include "cases.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

static size_t pagesz(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * The holder: the parent maps one secret page and one page of an ordinary
 * memfd (the control), fills the secret, forks; the child keeps both
 * mappings, the ordinary fd and (if keep_fd) the secret fd, and waits.  The
 * parent keeps its own mapping of the secret page to compare with.
 */
static unsigned char *plain_page;
static int plain_fd = -1;

int case_holder_start(struct holder_child *h, int keep_fd, struct case_result *r)
{
	size_t page = pagesz();
	int p[2];
	char c;

	h->pid = -1;
	h->fd = case_secret_fd(page, O_CLOEXEC);
	if (h->fd < 0)
		return (case_fail(r, "memfd_secret: %s", cli_errno_name(-h->fd)), -1);
	h->secret = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
	if (h->secret == MAP_FAILED)
		return (case_fail(r, "secret mapping: %s", ENAME()), -1);
	case_fill(h->secret, page, SEED_SECRET);
	plain_fd = memfd_create("secretmem-check-control", MFD_CLOEXEC);
	if (plain_fd < 0 || ftruncate(plain_fd, (off_t)page) != 0)
		return (case_fail(r, "memfd_create (control): %s", ENAME()), -1);
	plain_page = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, plain_fd, 0);
	if (plain_page == MAP_FAILED)
		return (case_fail(r, "control mapping: %s", ENAME()), -1);
	case_fill(plain_page, page, SEED_PLAIN);
	if (pipe2(p, O_CLOEXEC) != 0)
		return (case_fail(r, "pipe: %s", ENAME()), -1);
	h->pid = case_spawn();
	if (h->pid < 0)
		return (case_fail(r, "fork: %s", ENAME()), -1);
	if (h->pid == 0) {
		close(p[0]);
		if (!keep_fd)
			close(h->fd);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		return (case_fail(r, "the holder process did not start"), -1);
	close(p[0]);
	close(h->fd); /* only the child holds it now (if keep_fd) */
	h->fd_open = keep_fd;
	return 0;
}

void case_holder_stop(struct holder_child *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		cli_wait(h->pid);
		h->pid = -1;
	}
}

/* open(path, O_RDWR): 0 if it opened (closed again), else the errno. */
static int try_open(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno ? errno : EIO;
}

int case_reopen(struct case_result *r)
{
	struct holder_child h;
	char path[128], fd_part[160], mf_part[200], opened[160] = "";
	size_t page = pagesz();
	int err, ctl, checked = 0;

	if (case_holder_start(&h, 1, r)) {
		case_holder_stop(&h);
		return r->verdict;
	}
	/* /proc/PID/fd/N: control (the ordinary memfd), then the secret file */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h.pid, plain_fd);
	ctl = try_open(path);
	if (ctl) {
		snprintf(fd_part, sizeof(fd_part), "/proc/PID/fd not checked (control: re-opening an "
			 "ordinary memfd gives %s)", cli_errno_name(ctl));
	} else {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h.pid, h.fd);
		err = try_open(path);
		if (!err)
			strcat(opened, " /proc/PID/fd/N");
		snprintf(fd_part, sizeof(fd_part), "/proc/PID/fd/N gives %s", cli_errno_name(err));
		checked++;
	}
	/* /proc/PID/map_files/START-END (needs CAP_SYS_ADMIN) */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)h.pid,
		 (unsigned long)(uintptr_t)plain_page, (unsigned long)(uintptr_t)plain_page + page);
	ctl = try_open(path);
	if (ctl) {
		snprintf(mf_part, sizeof(mf_part), "/proc/PID/map_files not checked (control: "
			 "re-opening an ordinary memfd mapping gives %s)", cli_errno_name(ctl));
	} else {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%lx-%lx", (int)h.pid,
			 (unsigned long)(uintptr_t)h.secret, (unsigned long)(uintptr_t)h.secret + page);
		err = try_open(path);
		if (!err)
			strcat(opened, " /proc/PID/map_files/<range>");
		snprintf(mf_part, sizeof(mf_part), "/proc/PID/map_files/<range> gives %s",
			 cli_errno_name(err));
		checked++;
	}
	case_holder_stop(&h);
	if (opened[0])
		return case_fail(r, "another process re-opened the secret memory file (O_RDWR) through"
				 "%s: it can map the pages again", opened);
	if (!checked)
		return case_skip(r, "%s; %s", fd_part, mf_part);
	return case_pass(r, "re-opening another process's secret memory file fails: %s; %s; "
			 "an ordinary memfd re-opens both ways", fd_part, mf_part);
}

int case_pidfd_getfd(struct case_result *r)
{
	struct holder_child h;
	size_t page = pagesz();
	char closed[96];
	int pidfd, nfd, err;

	if (case_holder_start(&h, 1, r)) {
		case_holder_stop(&h);
		return r->verdict;
	}
	pidfd = (int)syscall(SYS_pidfd_open, h.pid, 0);
	if (pidfd < 0) {
		err = errno;
		case_holder_stop(&h);
		return case_skip(r, "pidfd_open: %s", cli_errno_name(err));
	}
	nfd = (int)syscall(SYS_pidfd_getfd, pidfd, h.fd, 0);
	if (nfd < 0) {
		err = errno;
		close(pidfd);
		case_holder_stop(&h);
		if (err == ENOSYS)
			return case_skip(r, "pidfd_getfd: ENOSYS (kernel before 5.6)");
		return case_info(r, "pidfd_getfd of another process's open secret memory fd was "
				 "refused here (%s): ptrace rights over the owner are needed",
				 cli_errno_name(err));
	}
	unsigned char *m = mmap(NULL, page, PROT_READ, MAP_SHARED, nfd, 0);
	size_t same = 0;
	if (m != MAP_FAILED) {
		while (same < page && m[same] == h.secret[same])
			same++;
		munmap(m, page);
	}
	err = errno;
	close(nfd);
	case_holder_stop(&h);
	/* the same with the fd closed in the owner: nothing to take */
	if (case_holder_start(&h, 0, r) == 0) {
		int pfd = (int)syscall(SYS_pidfd_open, h.pid, 0);
		int n = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, h.fd, 0);
		int e = errno;
		snprintf(closed, sizeof(closed), "with the fd closed there is none to take (%s)",
			 n < 0 ? cli_errno_name(e) : "an fd was returned");
		if (n >= 0)
			close(n);
		if (pfd >= 0)
			close(pfd);
	} else {
		snprintf(closed, sizeof(closed), "(second holder failed)");
	}
	case_holder_stop(&h);
	close(pidfd);
	if (m == MAP_FAILED)
		return case_info(r, "pidfd_getfd duplicated another process's open secret memory fd, "
				 "but mapping it failed (%s); %s", cli_errno_name(err), closed);
	return case_info(r, "while its owner keeps the fd open, pidfd_getfd (ptrace rights) takes it "
			 "and a MAP_SHARED mapping reads the secret (%zu of %zu bytes match); %s. "
			 "libsecretmem keeps no fd open (case no-fd)", same, page, closed);
}

/* Secretmem fds open in this process. */
static int count_secret_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	char link[300], target[256];
	int n = 0;

	if (!d)
		return -errno;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (k < 0)
			continue;
		target[k] = '\0';
		n += strcmp(target, CLI_SECRETMEM_NAME) == 0;
	}
	closedir(d);
	return n;
}

int case_no_fd(struct case_result *r)
{
	size_t page = pagesz();
	struct secretmem_region *rg[3];
	void *blk[8];
	int fds, secret;

	for (size_t i = 0; i < 3; i++) {
		rg[i] = secretmem_region_create((i + 1) * page, SECRETMEM_REGION_REQUIRE_SECRET);
		if (!rg[i])
			return case_fail(r, "secretmem_region_create: %s", ENAME());
	}
	for (size_t i = 0; i < 8; i++) {
		/* small classes, and one of a larger class's slabs: what fits
		 * in the 64 KiB of limit check asks for */
		size_t n = i < 7 ? 24 + i * 8 : 2000;
		blk[i] = secretmem_malloc(n);
		if (!blk[i])
			return case_fail(r, "secretmem_malloc: %s", ENAME());
		memset(blk[i], 0x5a, n);
	}
	secret = cli_is_secret_mapping(secretmem_region_data(rg[0]));
	if (secret != 1)
		return case_fail(r, "a libsecretmem region is not a mapping of a secretmem file "
				 "(backend %s): nothing to check", secretmem_backend_name(
					 secretmem_default_backend()));
	if (cli_is_secret_mapping(blk[0]) != 1)
		return case_fail(r, "a secretmem_malloc block is not in a secretmem mapping");
	fds = count_secret_fds();
	if (fds < 0)
		return case_skip(r, "cannot read /proc/self/fd: %s", cli_errno_name(-fds));
	if (fds > 0)
		return case_fail(r, "%d secretmem fd%s stay%s open while libsecretmem regions and blocks "
				 "live: pidfd_getfd could take %s", fds, fds == 1 ? "" : "s",
				 fds == 1 ? "s" : "", fds == 1 ? "it" : "them");
	for (size_t i = 0; i < 8; i++)
		secretmem_free(blk[i]);
	for (size_t i = 0; i < 3; i++)
		secretmem_region_destroy(rg[i]);
	fds = count_secret_fds();
	if (fds != 0)
		return case_fail(r, "%d secretmem fd%s open after freeing", fds, fds == 1 ? "" : "s");
	return case_pass(r, "3 libsecretmem regions and 8 secretmem_malloc blocks live in secretmem "
			 "mappings with no secretmem fd open (none for pidfd_getfd to take)");
}
