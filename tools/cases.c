/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * cases.c - the conformance cases of `secretmem check`: the file descriptor,
 * mapping, locking and memory-lock limit, fork, exec and hibernation (the
 * cases about who can see the memory are in cases_access.c), and the table
 * of all cases.
 *
 * Each case checks one documented behaviour of memfd_secret(2) and returns
 * PASS, FAIL, SKIP or INFO with a one-line reason.  check.c runs every case in its
 * own child process, so a case may crash, leak or change its own process
 * state (limits, capabilities) freely.  The cases call the kernel directly:
 * cli_memfd_secret() and the memory-lock operations of fake.c (the raw
 * system calls, or the fake kernel's under SECRETMEM_CHECK_FAKE_KERNEL) and
 * libc.  The expected behaviour of each case is described in secretmem(1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "cli.h"
#include "cases.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define MEMLOCK_TEST_LIMIT (64u * 1024)

static size_t page; /* set by cli_cases_init() */

void cli_cases_init(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	cases_access_init(page);
	cases_mm_init(page);
}

/* ---- reporting from inside a case ------------------------------------ */

__attribute__((format(printf, 3, 0)))
static int vset(struct case_result *r, int v, const char *fmt, va_list ap)
{
	r->verdict = v;
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	return v;
}

int case_pass(struct case_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int v = vset(r, CASE_PASS, fmt, ap);
	va_end(ap);
	return v;
}

int case_fail(struct case_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int v = vset(r, CASE_FAIL, fmt, ap);
	va_end(ap);
	return v;
}

int case_info(struct case_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int v = vset(r, CASE_INFO, fmt, ap);
	va_end(ap);
	return v;
}

int case_skip(struct case_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int v = vset(r, CASE_SKIP, fmt, ap);
	va_end(ap);
	return v;
}


/* ---- helpers used by the cases --------------------------------------- */

static long raw_memfd_secret(unsigned int flags)
{
	return cli_memfd_secret(flags); /* the raw call, or the fake kernel's */
}

/* A secretmem fd of the given size (0: left unsized); -errno on failure. */
int case_secret_fd(size_t size, unsigned int flags)
{
	int fd = cli_memfd_secret(flags);

	if (fd < 0)
		return -errno;
	if (size && ftruncate(fd, (off_t)size) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/* size bytes of secret memory, mapped shared read-write; NULL + errno. */
unsigned char *cli_secret_map(size_t size)
{
	int fd = case_secret_fd(size, O_CLOEXEC);
	void *p;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int err = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = err;
		return NULL;
	}
	return p;
}

unsigned char *case_plain_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Pseudo-random bytes written straight into p (never staged elsewhere). */
void case_fill(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 32);
	}
}

/* fork a helper that dies with its parent and never dumps core */
pid_t case_spawn(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getrlimit(RLIMIT_CORE, &rl) == 0) {
			rl.rlim_cur = 0;
			setrlimit(RLIMIT_CORE, &rl);
		}
	}
	return pid;
}

/* VmFlags of the mapping of this process that holds addr; 0 or -errno. */
int cli_vmflags_of(const void *addr, char *flags, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0, rc = -ENOENT;
	uintptr_t want = (uintptr_t)addr;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		/* a mapping's header line; field lines ("Rss:") never parse */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start <= want && want < end;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			size_t n = strcspn(line + 8, "\n");
			if (n >= size)
				n = size - 1;
			memcpy(flags, line + 8, n);
			flags[n] = '\0';
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int case_drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	unsigned int idx = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);

	/* needs CAP_SETPCAP; without it the bounding set does not matter here */
	prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0);
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
	data[idx].effective &= ~bit;
	data[idx].permitted &= ~bit;
	data[idx].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return -errno;
	return 0;
}

/* ---- cases: the file descriptor -------------------------------------- */

static int case_flags(struct case_result *r)
{
	static const unsigned int bad[] = { 1u /* FD_CLOEXEC */, O_RDWR, O_NONBLOCK, 0x80000000u };
	long fd;
	int fl;

	fd = raw_memfd_secret(0);
	if (fd < 0)
		return case_fail(r, "flags 0 refused with %s", ENAME());
	fl = fcntl((int)fd, F_GETFD);
	close((int)fd);
	if (fl < 0 || (fl & FD_CLOEXEC))
		return case_fail(r, "flags 0 gave a close-on-exec descriptor");
	fd = raw_memfd_secret(O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "O_CLOEXEC refused with %s", ENAME());
	fl = fcntl((int)fd, F_GETFD);
	close((int)fd);
	if (fl < 0 || !(fl & FD_CLOEXEC))
		return case_fail(r, "O_CLOEXEC did not set FD_CLOEXEC on the descriptor");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = raw_memfd_secret(bad[i]);
		if (fd >= 0) {
			close((int)fd);
			return case_fail(r, "flags 0x%x accepted, expected EINVAL", bad[i]);
		}
		if (errno != EINVAL)
			return case_fail(r, "flags 0x%x gave %s, expected EINVAL", bad[i], ENAME());
	}
	return case_pass(r, "0 and O_CLOEXEC accepted, O_CLOEXEC sets FD_CLOEXEC; "
		       "0x1 (FD_CLOEXEC), O_RDWR, O_NONBLOCK, 0x80000000 give EINVAL");
}

static int case_fd(struct case_result *r)
{
	struct stat st;
	char b[16] = { 0 }, seen[256];
	int fd = case_secret_fd(0, O_CLOEXEC), fl;
	size_t used = 0;

	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
		return case_fail(r, "descriptor is not O_RDWR (F_GETFL 0x%x)", (unsigned)fl);
	if (fstat(fd, &st) != 0)
		return case_fail(r, "fstat: %s", ENAME());
	if (!S_ISREG(st.st_mode))
		return case_fail(r, "not a regular file (mode 0%o)", (unsigned)st.st_mode);
	if (st.st_size != 0)
		return case_fail(r, "new file has size %lld, expected 0", (long long)st.st_size);
	if (ftruncate(fd, (off_t)page) != 0)
		return case_fail(r, "ftruncate: %s", ENAME());
	seen[0] = '\0';
#define MUST_FAIL(name, call)                                                       \
	do {                                                                        \
		errno = 0;                                                          \
		if ((call) >= 0)                                                    \
			return case_fail(r, name " on the secretmem fd succeeded");      \
		used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s %s", \
					 used ? ", " : "", name, ENAME());          \
	} while (0)
	MUST_FAIL("read", read(fd, b, sizeof(b)));
	MUST_FAIL("write", write(fd, b, sizeof(b)));
	MUST_FAIL("pread", pread(fd, b, sizeof(b), 0));
	MUST_FAIL("pwrite", pwrite(fd, b, sizeof(b), 0));
	MUST_FAIL("lseek", lseek(fd, 1, SEEK_SET));
	MUST_FAIL("fallocate", fallocate(fd, 0, 0, (off_t)page));
#undef MUST_FAIL
	close(fd);
	return case_pass(r, "O_RDWR regular file of size 0; %s", seen);
}

static int case_size(struct case_result *r)
{
	static const size_t again[] = { 1, 2, 0 }; /* in pages */
	struct stat st;
	int fd = case_secret_fd(0, O_CLOEXEC);

	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	if (ftruncate(fd, (off_t)page) != 0)
		return case_fail(r, "first ftruncate failed with %s", ENAME());
	for (size_t i = 0; i < sizeof(again) / sizeof(again[0]); i++) {
		if (ftruncate(fd, (off_t)(again[i] * page)) == 0)
			return case_fail(r, "a second ftruncate (to %zu bytes) succeeded, expected EINVAL",
				    again[i] * page);
		if (errno != EINVAL)
			return case_fail(r, "a second ftruncate gave %s, expected EINVAL", ENAME());
	}
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != page)
		return case_fail(r, "size is not %zu after the refused calls", page);
	close(fd);
	return case_pass(r, "first ftruncate sets the size; later ones (same, larger, 0) give EINVAL");
}

/* ---- cases: mapping -------------------------------------------------- */

static int case_mmap(struct case_result *r)
{
	int fd = case_secret_fd(page, O_CLOEXEC);
	unsigned char *m;
	void *p;
	char exec_err[32];

	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p != MAP_FAILED)
		return case_fail(r, "MAP_PRIVATE mapping accepted, expected EINVAL");
	if (errno != EINVAL)
		return case_fail(r, "MAP_PRIVATE gave %s, expected EINVAL", ENAME());
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED)
		return case_fail(r, "PROT_EXEC mapping accepted");
	snprintf(exec_err, sizeof(exec_err), "%s", ENAME());
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return case_fail(r, "MAP_SHARED mapping failed with %s", ENAME());
	close(fd);
	for (size_t i = 0; i < page; i++)
		if (m[i] != 0)
			return case_fail(r, "a new page is not zero at byte %zu", i);
	for (size_t i = 0; i < page; i++)
		m[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < page; i++)
		if (m[i] != (unsigned char)(i * 7 + 1))
			return case_fail(r, "written data did not read back at byte %zu", i);
	if (mprotect(m, page, PROT_READ | PROT_EXEC) == 0)
		return case_fail(r, "mprotect to PROT_EXEC accepted");
	pid_t pid = case_spawn();
	if (pid < 0)
		return case_fail(r, "fork: %s", ENAME());
	if (pid == 0) {
		volatile unsigned char *past = m + page;
		signal(SIGBUS, SIG_DFL); /* a sanitizer's handler would exit instead */
		*past = 1; /* beyond the file's size: must be SIGBUS */
		_exit(3);
	}
	int st = cli_wait(pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGBUS)
		return case_fail(r, "touching the page past EOF: %s, expected SIGBUS", cli_status_text(st));
	munmap(m, 2 * page);
	return case_pass(r, "MAP_PRIVATE EINVAL, PROT_EXEC %s, MAP_SHARED works, new pages read zero, "
		       "past EOF SIGBUS", exec_err);
}

static int case_locking(struct case_result *r)
{
	unsigned char *m = cli_secret_map(2 * page);

	if (!m)
		return case_fail(r, "secret mapping: %s", ENAME());
	/* the raw call: sanitizer runtimes replace mlock() with a no-op */
	if (syscall(SYS_mlock, m, page) == 0)
		return case_fail(r, "mlock succeeded, expected ENOMEM");
	if (errno != ENOMEM)
		return case_fail(r, "mlock gave %s, expected ENOMEM", ENAME());
	if (madvise(m, page, MADV_POPULATE_WRITE) == 0)
		return case_fail(r, "MADV_POPULATE_WRITE succeeded, expected EINVAL");
	if (errno != EINVAL)
		return case_fail(r, "MADV_POPULATE_WRITE gave %s, expected EINVAL", ENAME());
	if (madvise(m, 2 * page, MADV_DONTFORK) != 0)
		return case_fail(r, "MADV_DONTFORK failed with %s", ENAME());
	return case_pass(r, "mlock ENOMEM, MADV_POPULATE_WRITE EINVAL, MADV_DONTFORK works");
}

static int case_memlock(struct case_result *r)
{
	const size_t lim = MEMLOCK_TEST_LIMIT;
	struct rlimit rl = { lim, lim };
	unsigned char *m1, *m2, *m3;
	int fd, rc;

	rc = case_drop_cap_ipc_lock();
	if (rc < 0 && cli_has_cap_ipc_lock() != 0)
		return case_skip(r, "cannot drop CAP_IPC_LOCK: %s", cli_errno_name(-rc));
	if (cli_has_cap_ipc_lock() != 0)
		return case_skip(r, "CAP_IPC_LOCK is still held after dropping it");
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return case_skip(r, "cannot set RLIMIT_MEMLOCK to 64 KiB: %s", ENAME());
	fd = case_secret_fd(1u << 20, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	m1 = mmap(NULL, 2 * lim, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m1 == MAP_FAILED) {
		if (errno != EAGAIN)
			return case_fail(r, "a 128 KiB map gave %s, expected EAGAIN or success", ENAME());
		/* mmap-time regime: VM_LOCKED mappings checked against the limit */
		m2 = mmap(NULL, lim / 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m2 == MAP_FAILED)
			return case_fail(r, "a 32 KiB map under a 64 KiB limit failed with %s", ENAME());
		for (size_t off = 0; off < lim / 2; off += page)
			m2[off] = 1;
		m3 = mmap(NULL, lim * 3 / 4, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m3 != MAP_FAILED)
			return case_fail(r, "a further 48 KiB map (80 KiB locked in all) succeeded");
		if (errno != EAGAIN)
			return case_fail(r, "a further 48 KiB map gave %s, expected EAGAIN", ENAME());
		return case_pass(r, "mmap-time regime: without CAP_IPC_LOCK and a 64 KiB limit, a 128 KiB "
			       "map is EAGAIN, 32 KiB works, a further 48 KiB is EAGAIN");
	}
	/* fault-time regime: each page charged when faulted; fault from the
	 * kernel side (read from /dev/zero) so a refused charge is an error */
	size_t got = 0;
	const char *why = "no error";
	while (got < 2 * lim) {
		int err = cli_kernel_fault(m1 + got, page);
		if (err < 0) {
			why = cli_errno_name(-err);
			break;
		}
		got += page;
	}
	if (got > lim)
		return case_fail(r, "fault-time regime: %zu KiB faulted in under a 64 KiB limit (%s)",
			    got / 1024, why);
	return case_pass(r, "fault-time regime: without CAP_IPC_LOCK and a 64 KiB limit, faulting stopped "
		       "after %zu KiB with %s", got / 1024, why);
}

/* ---- cases: fork and exec -------------------------------------------- */

static int case_fork(struct case_result *r)
{
	unsigned char *m = cli_secret_map(page), *d = cli_secret_map(page);
	pid_t pid;
	int st;

	if (!m || !d)
		return case_fail(r, "secret mapping: %s", ENAME());
	m[0] = 0x11;
	pid = case_spawn();
	if (pid < 0)
		return case_fail(r, "fork: %s", ENAME());
	if (pid == 0) {
		int saw = m[0] == 0x11;
		m[0] = 0x22;
		_exit(saw ? 0 : 3);
	}
	st = cli_wait(pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return case_fail(r, "the child did not see the parent's data (%s)", cli_status_text(st));
	if (m[0] != 0x22)
		return case_fail(r, "the child's write is not visible to the parent: the mapping is not shared");
	d[0] = 0x33;
	if (madvise(d, page, MADV_DONTFORK) != 0)
		return case_fail(r, "MADV_DONTFORK: %s", ENAME());
	pid = case_spawn();
	if (pid < 0)
		return case_fail(r, "fork: %s", ENAME());
	if (pid == 0) {
		volatile unsigned char *v = d;
		signal(SIGSEGV, SIG_DFL);
		_exit(v[0] == 0x33 ? 3 : 4);
	}
	st = cli_wait(pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV)
		return case_fail(r, "a child touching a MADV_DONTFORK mapping: %s, expected SIGSEGV%s",
			    cli_status_text(st), WIFEXITED(st) && WEXITSTATUS(st) == 3 ?
			    " (it still sees the secret)" : "");
	return case_pass(r, "a forked child shares the pages (its write is seen); with MADV_DONTFORK it "
		       "has no mapping (SIGSEGV)");
}

int cmd_probe_fd(int argc, char **argv)
{
	int mask = 0;

	for (int i = 1; i < argc && i < 8; i++) {
		char path[64], target[256];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", argv[i]);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, CLI_SECRETMEM_NAME) == 0)
			mask |= 1 << (i - 1);
	}
	return mask;
}

static int case_exec(struct case_result *r)
{
	int keep = case_secret_fd(0, 0), cloexec = case_secret_fd(0, O_CLOEXEC), st;
	char a[16], b[16];
	pid_t pid;

	if (keep < 0 || cloexec < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(keep < 0 ? -keep : -cloexec));
	snprintf(a, sizeof(a), "%d", keep);
	snprintf(b, sizeof(b), "%d", cloexec);
	pid = case_spawn();
	if (pid < 0)
		return case_fail(r, "fork: %s", ENAME());
	if (pid == 0) {
		execl("/proc/self/exe", "secretmem", "internal-probe-fd", a, b, (char *)NULL);
		_exit(127);
	}
	st = cli_wait(pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return case_skip(r, "cannot execute /proc/self/exe to look at the descriptors");
	if (!WIFEXITED(st))
		return case_fail(r, "the exec'd probe ended with %s", cli_status_text(st));
	switch (WEXITSTATUS(st)) {
	case 1:
		return case_pass(r, "an fd without O_CLOEXEC survives exec (still a secretmem file); "
			       "an O_CLOEXEC fd is closed");
	case 0:
		return case_fail(r, "the fd without O_CLOEXEC did not survive exec");
	case 2:
		return case_fail(r, "the fd without O_CLOEXEC was closed and the O_CLOEXEC one kept");
	default:
		return case_fail(r, "the O_CLOEXEC fd was not closed on exec");
	}
}

/* ---- case: hibernation ----------------------------------------------- */

static int case_hibernation(struct case_result *r)
{
	char before[256], during[256], after[256];
	int h = cli_hibernation(before, sizeof(before)), fd;

	if (h == CLI_HIBERNATION_UNSUPPORTED)
		return case_skip(r, "no hibernation support on this machine (/sys/power/state: \"%s\", "
			       "no /sys/power/disk)", before);
	if (h == CLI_HIBERNATION_UNAVAILABLE)
		return case_skip(r, "hibernation is already unavailable (another process holds secret "
			       "memory - see `secretmem status` - or nohibernate/lockdown)");
	fd = case_secret_fd(0, O_CLOEXEC);
	if (fd < 0)
		return case_fail(r, "memfd_secret: %s", cli_errno_name(-fd));
	cli_hibernation(during, sizeof(during));
	close(fd);
	if (cli_has_word(during, "disk"))
		return case_fail(r, "/sys/power/state still offers disk (\"%s\") while a secretmem file exists",
			    during);
	cli_hibernation(after, sizeof(after));
	return case_pass(r, "/sys/power/state drops disk while a secretmem file exists (\"%s\" -> \"%s\"); "
		       "after close: \"%s\"", before, during, after);
}

/* ---- the case table and the runner ----------------------------------- */

const struct check_case cli_cases[] = {
	{ "flags", "only O_CLOEXEC is a valid flag; FD_CLOEXEC (1) is EINVAL", case_flags },
	{ "fd", "an O_RDWR regular file of size 0; read/write/pread/pwrite/lseek/fallocate fail",
	  case_fd },
	{ "size", "ftruncate sets the size once; a second call is EINVAL", case_size },
	{ "mmap", "MAP_SHARED only, no PROT_EXEC, zeroed pages, SIGBUS past EOF", case_mmap },
	{ "locking", "mlock ENOMEM, MADV_POPULATE_WRITE EINVAL, MADV_DONTFORK works", case_locking },
	{ "memlock", "RLIMIT_MEMLOCK is enforced without CAP_IPC_LOCK (mmap-time or fault-time)",
	  case_memlock },
	{ "memlock-selftest", "every capability dropped: a map of the limit works, twice it fails "
	  "(mmap-time regime)", case_memlock_selftest },
	{ "memlock-touch", "a touch past the limit is SIGBUS and the charge outlives munmap "
	  "(fault-time regime)", case_memlock_touch },
	{ "proc-mem", "another process cannot read the pages through /proc/PID/mem", case_proc_mem },
	{ "process-vm-readv", "another process cannot read the pages with process_vm_readv",
	  case_process_vm_readv },
	{ "ptrace", "a tracer cannot read the pages with PTRACE_PEEKDATA", case_ptrace },
	{ "reopen", "/proc/PID/fd/N and /proc/PID/map_files of a secret mapping cannot be re-opened",
	  case_reopen },
	{ "pidfd-getfd", "fact: pidfd_getfd takes an open secret memory fd, which maps the pages",
	  case_pidfd_getfd },
	{ "no-fd", "libsecretmem keeps no secret memory fd open for its regions and blocks",
	  case_no_fd },
	{ "o-direct", "O_DIRECT I/O from a secret buffer fails (pages cannot be pinned)",
	  case_o_direct },
	{ "vmsplice", "vmsplice of a secret buffer fails (pages cannot be pinned)", case_vmsplice },
	{ "vmsplice-remap", "vmsplice is EFAULT for fresh, touched and re-mapped secret pages",
	  case_vmsplice_remap },
	{ "io-uring", "io_uring cannot register a secret buffer (IORING_REGISTER_BUFFERS)",
	  case_io_uring },
	{ "userfaultfd", "userfaultfd registration of a secret range is EINVAL", case_userfaultfd },
	{ "mremap", "mremap grows (SIGBUS past the file's end) and moves a secret mapping",
	  case_mremap },
	{ "madvise", "MERGEABLE/HUGEPAGE/FREE/COLD/PAGEOUT keep the contents; nothing is merged",
	  case_madvise },
	{ "pagemap", "fact: what /proc/self/pagemap shows of a touched secret page", case_pagemap },
	{ "memcg", "touched secret pages are charged to the memory cgroup", case_memcg },
	{ "write", "plain write()/read() from and into a secret buffer work", case_write },
	{ "coredump", "the pages are excluded from core dumps", case_coredump },
	{ "fork", "a forked child shares the mapping unless MADV_DONTFORK", case_fork },
	{ "exec", "the fd survives exec without O_CLOEXEC and is closed with it", case_exec },
	{ "hibernation", "/sys/power/state lacks disk while a secretmem file exists",
	  case_hibernation },
};

const size_t cli_ncases = sizeof(cli_cases) / sizeof(cli_cases[0]);
