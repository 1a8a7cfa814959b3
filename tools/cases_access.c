/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases_access.c - the conformance cases about who can see secret memory:
 * another process (/proc/PID/mem, process_vm_readv, ptrace), the kernel
 * pinning pages (O_DIRECT, vmsplice) or copying them (write/read), and core
 * dumps.  See cases.c for how cases are written and run.
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
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "cases.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994UL
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6UL
#endif

static size_t page;

void cases_access_init(size_t page_size)
{
	page = page_size;
}

/* ---- cases: who can see the memory ----------------------------------- */

struct target {
	pid_t pid;
	unsigned char *secret; /* one page, shared with the target */
	unsigned char *plain;  /* one ordinary page, copied by fork */
};

/* Starts a child that holds a secret page and an ordinary page, both filled
 * with known patterns.  0, or -1 with the verdict set in r. */
static int target_start(struct target *t, struct case_result *r)
{
	int p[2];
	char c;

	t->secret = cli_secret_map(page);
	if (!t->secret)
		return (case_fail(r, "secret mapping: %s", ENAME()), -1);
	t->plain = case_plain_map(page);
	if (!t->plain)
		return (case_fail(r, "anonymous mapping: %s", ENAME()), -1);
	case_fill(t->secret, page, SEED_SECRET);
	case_fill(t->plain, page, SEED_PLAIN);
	if (pipe2(p, O_CLOEXEC) != 0)
		return (case_fail(r, "pipe: %s", ENAME()), -1);
	t->pid = case_spawn();
	if (t->pid < 0)
		return (case_fail(r, "fork: %s", ENAME()), -1);
	if (t->pid == 0) {
		close(p[0]);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		return (case_fail(r, "the target process did not start"), -1);
	close(p[0]);
	return 0;
}

static void target_stop(struct target *t)
{
	kill(t->pid, SIGKILL);
	cli_wait(t->pid);
}

int case_proc_mem(struct case_result *r)
{
	struct target t;
	char path[64];
	unsigned char *buf = case_plain_map(page);
	int fd;
	ssize_t n;

	if (!buf || target_start(&t, r))
		return buf ? r->verdict : case_fail(r, "out of memory");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		target_stop(&t);
		return case_skip(r, "cannot open %s: %s", path, ENAME());
	}
	n = pread(fd, buf, page, (off_t)(uintptr_t)t.plain);
	if (n != (ssize_t)page) {
		target_stop(&t);
		return case_skip(r, "control failed: reading an ordinary page of another process gives %s",
			    n < 0 ? ENAME() : "a short read");
	}
	if (memcmp(buf, t.plain, page) != 0)
		return case_fail(r, "control read returned wrong data");
	errno = 0;
	n = pread(fd, buf, page, (off_t)(uintptr_t)t.secret);
	int err = errno;
	close(fd);
	target_stop(&t);
	if (n > 0)
		return case_fail(r, "read %zd bytes of another process's secret memory%s", n,
			    memcmp(buf, t.secret, (size_t)n) == 0 ? " (its real contents)" : "");
	if (n == 0)
		return case_fail(r, "reading the secret page returned 0 bytes instead of an error");
	return case_pass(r, "reading the secret page fails with %s; the ordinary page reads back",
		    cli_errno_name(err));
}

int case_process_vm_readv(struct case_result *r)
{
	struct target t;
	unsigned char *buf = case_plain_map(page);
	struct iovec local, remote;
	ssize_t n;

	if (!buf || target_start(&t, r))
		return buf ? r->verdict : case_fail(r, "out of memory");
	local = (struct iovec){ buf, page };
	remote = (struct iovec){ t.plain, page };
	n = process_vm_readv(t.pid, &local, 1, &remote, 1, 0);
	if (n != (ssize_t)page) {
		target_stop(&t);
		return case_skip(r, "control failed: process_vm_readv of an ordinary page gives %s",
			    n < 0 ? ENAME() : "a short read");
	}
	if (memcmp(buf, t.plain, page) != 0)
		return case_fail(r, "control read returned wrong data");
	remote = (struct iovec){ t.secret, page };
	errno = 0;
	n = process_vm_readv(t.pid, &local, 1, &remote, 1, 0);
	int err = errno;
	target_stop(&t);
	if (n > 0)
		return case_fail(r, "read %zd bytes of another process's secret memory%s", n,
			    memcmp(buf, t.secret, (size_t)n) == 0 ? " (its real contents)" : "");
	if (n == 0)
		return case_fail(r, "process_vm_readv returned 0 bytes instead of an error");
	return case_pass(r, "process_vm_readv of the secret page fails with %s; the ordinary page reads back",
		    cli_errno_name(err));
}

int case_ptrace(struct case_result *r)
{
	struct target t;
	long want, v;
	int st, err;

	if (target_start(&t, r))
		return r->verdict;
	if (ptrace(PTRACE_ATTACH, t.pid, NULL, NULL) != 0) {
		err = errno;
		target_stop(&t);
		return case_skip(r, "PTRACE_ATTACH: %s", cli_errno_name(err));
	}
	if (waitpid(t.pid, &st, __WALL) < 0) {
		err = errno;
		target_stop(&t);
		return case_fail(r, "waitpid after PTRACE_ATTACH: %s", cli_errno_name(err));
	}
	memcpy(&want, t.plain, sizeof(want));
	errno = 0;
	v = ptrace(PTRACE_PEEKDATA, t.pid, t.plain, NULL);
	if (errno != 0 || v != want) {
		err = errno;
		target_stop(&t);
		return case_skip(r, "control failed: PEEKDATA of an ordinary word gives %s",
			    err ? cli_errno_name(err) : "wrong data");
	}
	errno = 0;
	v = ptrace(PTRACE_PEEKDATA, t.pid, t.secret, NULL);
	err = errno;
	ptrace(PTRACE_DETACH, t.pid, NULL, NULL);
	target_stop(&t);
	if (err == 0)
		return case_fail(r, "PTRACE_PEEKDATA read a word of secret memory%s",
			    memcmp(&v, t.secret, sizeof(v)) == 0 ? " (its real contents)" : "");
	return case_pass(r, "PTRACE_PEEKDATA of the secret page fails with %s; an ordinary word reads back",
		    cli_errno_name(err));
}

int case_o_direct(struct case_result *r)
{
	const char *dirs[] = { getenv("TMPDIR"), "/var/tmp", "/tmp", "." };
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page);
	char tried[256] = "";
	size_t used = 0;

	if (!secret || !plain)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct statfs sfs;
		const char *why;
		int fd;

		if (!dirs[i] || !dirs[i][0])
			continue;
		fd = open(dirs[i], O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
		if (fd < 0) {
			why = ENAME();
		} else if (fstatfs(fd, &sfs) == 0 &&
			   ((unsigned long)sfs.f_type == TMPFS_MAGIC || (unsigned long)sfs.f_type == RAMFS_MAGIC)) {
			why = "tmpfs (no real direct I/O)";
		} else if (pwrite(fd, plain, page, 0) != (ssize_t)page) {
			why = ENAME();
		} else {
			errno = 0;
			ssize_t n = pwrite(fd, secret, page, (off_t)page);
			int err = errno;
			close(fd);
			if (n >= 0)
				return case_fail(r, "an O_DIRECT write from a secret buffer succeeded (%zd bytes, in %s)",
					    n, dirs[i]);
			return case_pass(r, "an O_DIRECT write from a secret buffer fails with %s; from an "
				       "ordinary buffer it works (in %s)", cli_errno_name(err), dirs[i]);
		}
		if (fd >= 0)
			close(fd);
		used += (size_t)snprintf(tried + used, sizeof(tried) - used, "%s%s: %s",
					 used ? ", " : "", dirs[i], why);
		if (used >= sizeof(tried))
			used = sizeof(tried) - 1;
	}
	return case_skip(r, "no directory allows O_DIRECT I/O (%s)", tried);
}

int case_vmsplice(struct case_result *r)
{
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page), *buf = case_plain_map(page);
	struct iovec v;
	int p[2];
	ssize_t n;

	if (!secret || !plain || !buf)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	if (pipe2(p, O_CLOEXEC) != 0)
		return case_fail(r, "pipe: %s", ENAME());
	v = (struct iovec){ plain, page };
	n = vmsplice(p[1], &v, 1, 0);
	if (n != (ssize_t)page)
		return case_skip(r, "control failed: vmsplice of an ordinary buffer gives %s",
			    n < 0 ? ENAME() : "a short count");
	if (read(p[0], buf, page) != (ssize_t)page)
		return case_fail(r, "draining the pipe: %s", ENAME());
	v = (struct iovec){ secret, page };
	errno = 0;
	n = vmsplice(p[1], &v, 1, 0);
	if (n >= 0)
		return case_fail(r, "vmsplice of a secret buffer succeeded (%zd bytes)", n);
	return case_pass(r, "vmsplice of a secret buffer fails with %s; of an ordinary buffer it works",
		    ENAME());
}

int case_write(struct case_result *r)
{
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page), *buf = case_plain_map(page);
	int p[2];

	if (!secret || !plain || !buf)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	if (pipe2(p, O_CLOEXEC) != 0)
		return case_fail(r, "pipe: %s", ENAME());
	if (write(p[1], secret, page) != (ssize_t)page)
		return case_fail(r, "write() from a secret buffer failed: %s", ENAME());
	if (read(p[0], buf, page) != (ssize_t)page || memcmp(buf, secret, page) != 0)
		return case_fail(r, "the data written from a secret buffer did not arrive");
	if (write(p[1], plain, page) != (ssize_t)page)
		return case_fail(r, "write: %s", ENAME());
	if (read(p[0], secret, page) != (ssize_t)page)
		return case_fail(r, "read() into a secret buffer failed: %s", ENAME());
	if (memcmp(secret, plain, page) != 0)
		return case_fail(r, "read() into a secret buffer stored wrong data");
	return case_pass(r, "write() from and read() into a secret buffer work (copied, not pinned)");
}

/* ---- case: core dumps ------------------------------------------------ */

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	char path[512];

	if (d) {
		for (struct dirent *e; (e = readdir(d));) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* Maps the first regular file in dir; NULL if none. */
static void *map_core(const char *dir, size_t *size)
{
	DIR *d = opendir(dir);
	void *p = NULL;
	char path[512];

	if (!d)
		return NULL;
	for (struct dirent *e; !p && (e = readdir(d));) {
		struct stat st;
		int fd;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
			p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (p == MAP_FAILED)
				p = NULL;
			else
				*size = (size_t)st.st_size;
		}
		close(fd);
	}
	closedir(d);
	return p;
}

static int write_core_pattern(const char *pattern)
{
	int fd = open("/proc/sys/kernel/core_pattern", O_WRONLY | O_CLOEXEC);
	size_t len = strlen(pattern);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, pattern, len) != (ssize_t)len)
		rc = -errno;
	close(fd);
	return rc;
}

int case_coredump(struct case_result *r)
{
	const size_t needle = 64;
	unsigned char *secret = cli_secret_map(page), *plain = case_plain_map(page);
	char flags[256], pattern[256], newpat[320], dir[] = "/tmp/secretmem-check-XXXXXX";
	struct rlimit rl;
	int rc, relative, redirect, st;
	size_t size = 0;
	unsigned char *core;

	if (!secret || !plain)
		return case_fail(r, "mapping: %s", ENAME());
	case_fill(secret, page, SEED_SECRET);
	case_fill(plain, page, SEED_PLAIN);
	rc = cli_vmflags_of(secret, flags, sizeof(flags));
	if (rc < 0)
		return case_fail(r, "cannot find the mapping in /proc/self/smaps: %s", cli_errno_name(-rc));
	if (!cli_has_word(flags, "dd"))
		return case_fail(r, "the secret mapping lacks VM_DONTDUMP (VmFlags:%s)", flags);

	/* A real dump where it is cheap and safe: a relative core_pattern
	 * dumps into the crashing process's working directory (our temporary
	 * directory); as root another pattern is redirected there briefly. */
	if (cli_read_file("/proc/sys/kernel/core_pattern", pattern, sizeof(pattern)) < 0)
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); no real dump: core_pattern unreadable");
	if (getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
	    rl.rlim_max < (64u << 20))
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); no real dump: RLIMIT_CORE hard limit %llu",
			    (unsigned long long)rl.rlim_max);
	relative = pattern[0] && pattern[0] != '|' && !strchr(pattern, '/');
	redirect = !relative && geteuid() == 0;
	if (!relative && !redirect)
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); no real dump: core_pattern '%s' needs root "
			       "to redirect", pattern);
	if (!mkdtemp(dir))
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); no real dump: mkdtemp: %s", ENAME());
	if (redirect) {
		snprintf(newpat, sizeof(newpat), "%s/core", dir);
		rc = write_core_pattern(newpat);
		if (rc < 0) {
			remove_dir(dir);
			return case_pass(r, "VmFlags has dd (VM_DONTDUMP); no real dump: cannot set core_pattern: %s",
				    cli_errno_name(-rc));
		}
	}
	pid_t pid = case_spawn();
	if (pid == 0) {
		struct rlimit big = { rl.rlim_max, rl.rlim_max };
		if (chdir(dir) != 0)
			_exit(2);
		setrlimit(RLIMIT_CORE, &big);
		prctl(PR_SET_DUMPABLE, 1);
		signal(SIGABRT, SIG_DFL);
		abort();
	}
	st = pid < 0 ? -1 : cli_wait(pid);
	if (redirect) {
		snprintf(newpat, sizeof(newpat), "%s\n", pattern);
		write_core_pattern(newpat);
	}
	if (st == -1 || !WIFSIGNALED(st) || !WCOREDUMP(st)) {
		remove_dir(dir);
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); the kernel wrote no core for the test child (%s)",
			    cli_status_text(st));
	}
	core = map_core(dir, &size);
	if (!core) {
		remove_dir(dir);
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); the core file was not found");
	}
	int has_plain = memmem(core, size, plain, needle) != NULL;
	int has_secret = memmem(core, size, secret, needle) != NULL;
	munmap(core, size);
	remove_dir(dir);
	if (has_secret)
		return case_fail(r, "a real core dump (%zu KiB) contains the secret page's contents", size / 1024);
	if (!has_plain)
		return case_pass(r, "VmFlags has dd (VM_DONTDUMP); the real dump was inconclusive (it lacks "
			       "the ordinary control page too)");
	return case_pass(r, "VmFlags has dd; a real core dump (%zu KiB) holds an ordinary page's pattern "
		       "but not the secret page's", size / 1024);
}
