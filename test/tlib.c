/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* tlib.c - helpers shared by the test programs; see tlib.h. */
#ifndef _GNU_SOURCE /* the Makefile also passes -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include "secretmem.h"
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HAVE_VALGRIND_H 1
#endif
#endif
#include "tlib.h"

void tl_skip(const char *reason)
{
	fflush(stdout);
	fprintf(stderr, "skip: %s\n", reason);
	exit(TL_SKIP);
}

void tl_skip_kernel(const char *reason)
{
	const char *req = getenv("SECRETMEM_TEST_REQUIRE_KERNEL");

	if (req && strcmp(req, "1") == 0) {
		fprintf(stderr, "FAIL: kernel feature missing but SECRETMEM_TEST_REQUIRE_KERNEL=1: %s\n", reason);
		exit(TL_FAILED);
	}
	tl_skip(reason);
}

int tl_run_script(const char *path)
{
	fflush(NULL);
	execl("/bin/sh", "sh", path, (char *)NULL);
	TL_FAIL("exec /bin/sh %s: %s", path, strerror(errno));
}

void tl_need_root(const char *why)
{
	if (geteuid() != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "needs root: %s", why);
		tl_skip(msg);
	}
}

void tl_need_secretmem(void)
{
	int rc = secretmem_supported();

	if (rc != 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "memfd_secret not usable here: %s", strerror(-rc));
		tl_skip_kernel(msg);
	}
}

int tl_under_valgrind(void)
{
	const char *v = getenv("SECRETMEM_UNDER_VALGRIND");
	return v && strcmp(v, "1") == 0;
}

/* Read fd to EOF into out (NUL-terminated, truncated to outlen), close it. */
static void read_child_output(int fd, char *out, size_t outlen)
{
	size_t used = 0;

	for (;;) {
		char tmp[512];
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t take = (size_t)n;
		if (outlen && take > outlen - 1 - used)
			take = outlen - 1 - used;
		memcpy(out + used, tmp, take);
		used += take;
	}
	if (outlen)
		out[used] = '\0';
	close(fd);
}

int tl_run_child(int (*fn)(void *), void *arg, char *out, size_t outlen)
{
	int fds[2] = { -1, -1 }, status = 0;

	fflush(stdout);
	fflush(stderr);
	if (out && pipe(fds) != 0)
		TL_FAIL("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		if (out) {
			dup2(fds[1], STDERR_FILENO);
			dup2(fds[1], STDOUT_FILENO);
			close(fds[0]);
			close(fds[1]);
		}
		int rc = fn(arg);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	if (out) {
		close(fds[1]);
		read_child_output(fds[0], out, outlen);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	return status;
}

static atomic_int idle_stop;

static void *idle_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&idle_stop))
		usleep(200);
	return NULL;
}

int tl_idle_start(pthread_t *t)
{
	atomic_store(&idle_stop, 0);
	int rc = pthread_create(t, NULL, idle_thread, NULL);
	return rc ? -rc : 0;
}

void tl_idle_stop(pthread_t t)
{
	atomic_store(&idle_stop, 1);
	pthread_join(t, NULL);
}

static atomic_int churn_stop;

static void *churn_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&churn_stop)) {
		void *v[32];
		for (int i = 0; i < 32; i++)
			v[i] = malloc((size_t)(i * 37) % 3000 + 1);
		for (int i = 0; i < 32; i++)
			free(v[i]);
	}
	return NULL;
}

void tl_churn_start(pthread_t *t, int n)
{
	atomic_store(&churn_stop, 0);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, churn_thread, NULL))
			TL_FAIL("pthread_create");
}

void tl_churn_stop(pthread_t *t, int n)
{
	atomic_store(&churn_stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* In the fork child: its threads (the entries of /proc/self/task). */
static int count_tasks(void *arg)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	(void)arg;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n < 255 ? n : 255;
}

int tl_fork_child_threads(void)
{
	int st = tl_run_child(count_tasks, NULL, NULL, 0);

	return WIFEXITED(st) && WEXITSTATUS(st) > 0 ? WEXITSTATUS(st) : -1;
}

const char *tl_status_str(int status)
{
	static char buf[64];

	if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", status);
	return buf;
}

int tl_drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0 && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capget, &hdr, data) != 0)
		return -errno;
	unsigned idx = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);
	data[idx].effective &= ~bit;
	data[idx].permitted &= ~bit;
	data[idx].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return -errno;
	return 0;
}

int tl_set_memlock(size_t bytes)
{
	struct rlimit rl = { bytes, bytes };

	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

int tl_seccomp_action(long nr, unsigned int action)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(filter) / sizeof(filter[0])), filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return -errno;
	return 0;
}

int tl_seccomp_block(long nr, int err)
{
	return tl_seccomp_action(nr, err ? SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)
				     : SECCOMP_RET_KILL_PROCESS);
}

int tl_read_proc_mem(pid_t pid, const void *addr, void *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pread(fd, buf, len, (off_t)(uintptr_t)addr);
	int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return rc;
}

int tl_read_vm(pid_t pid, const void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

int tl_read_ptrace(pid_t pid, const void *addr, long *word)
{
	int status, rc = 0;

	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) != 0)
		return -errno;
	if (waitpid(pid, &status, __WALL) < 0) {
		rc = -errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return rc;
	}
	errno = 0;
	long v = ptrace(PTRACE_PEEKDATA, pid, (void *)(uintptr_t)addr, NULL);
	if (errno)
		rc = -errno;
	else
		*word = v;
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return rc;
}

int tl_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		TL_FAIL("opendir /proc/self/fd: %s", strerror(errno));
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tl_fill(void *p, size_t len, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t s = seed, v = 0;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = splitmix(&s);
		b[i] = (unsigned char)(v >> (8 * (i % 8)));
	}
}

int tl_check(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t s = seed, v = 0;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = splitmix(&s);
		if (b[i] != (unsigned char)(v >> (8 * (i % 8))))
			return 0;
	}
	return 1;
}

int tl_contains(const void *hay, size_t haylen, const void *needle, size_t nlen)
{
	return memmem(hay, haylen, needle, nlen) != NULL;
}

const char *tl_build_path(const char *name)
{
	static char buf[4096];
	const char *b = getenv("SECRETMEM_BUILD");

	snprintf(buf, sizeof(buf), "%s/%s", b && *b ? b : "build", name);
	return buf;
}

/* ---- added for the core tests (h1) ------------------------------------ */

void tl_signal_default(int sig)
{
	/* the kernel's struct sigaction, all zero: SIG_DFL, no flags, empty
	 * mask (the same layout-independent meaning on every architecture) */
	unsigned long ksa[8] = { 0 };
	sigset_t set;

	syscall(SYS_rt_sigaction, sig, ksa, NULL, (size_t)(_NSIG / 8));
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int tl_maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	if (!f)
		return -errno;
	while ((c = getc(f)) != EOF)
		if (c == '\n')
			n++;
	fclose(f);
	return n;
}

/* Mappings of secret memory: lines of /proc/self/maps backed by a
 * memfd_secret file, and the anonymous inaccessible lines that touch one
 * of them (the guard pages at a region's ends).  Unlike tl_maps_count it
 * does not move when a runtime beside the library (a sanitizer's) maps
 * memory of its own. */
int tl_maps_count_secret(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	struct ml {
		unsigned long lo, hi;
		char kind; /* 's' secret, 'n' anonymous ---p, 0 other */
	} *v = NULL;
	size_t n = 0, cap = 0;
	char buf[4096];
	int count = 0;

	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8], dev[16];
		int end = 0;

		if (sscanf(buf, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &ino, &end) < 6)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct ml *w = realloc(v, cap * sizeof(*v));
			if (!w) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = w;
		}
		v[n].lo = lo;
		v[n].hi = hi;
		v[n].kind = strstr(buf + end, "/secretmem") ? 's' : (ino == 0 && strcmp(perms, "---p") == 0) ? 'n' : 0;
		n++;
	}
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == 's' ||
		    (v[i].kind == 'n' && ((i > 0 && v[i - 1].kind == 's' && v[i - 1].hi == v[i].lo) ||
					  (i + 1 < n && v[i + 1].kind == 's' && v[i + 1].lo == v[i].hi))))
			count++;
	free(v);
	return count;
}

/* Find the mapping containing addr in a maps-format file; on success the
 * stream is left just after its line. */
static int find_mapping(FILE *f, uintptr_t a, char *line, size_t len)
{
	char buf[4096];

	while (fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi;
		if (sscanf(buf, "%lx-%lx ", &lo, &hi) != 2)
			continue; /* smaps field lines */
		if (a >= lo && a < hi) {
			buf[strcspn(buf, "\n")] = '\0';
			if (line && len)
				snprintf(line, len, "%s", buf);
			return 0;
		}
	}
	return -ENOENT;
}

int tl_maps_line(const void *addr, char *line, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -errno;
	int rc = find_mapping(f, (uintptr_t)addr, line, len);
	fclose(f);
	return rc;
}

int tl_has_vmflag(const void *addr, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char buf[4096];
	int rc;

	if (!f)
		return -errno;
	rc = find_mapping(f, (uintptr_t)addr, NULL, 0);
	if (rc == 0) {
		rc = -ENOENT;
		while (fgets(buf, sizeof(buf), f)) {
			if (strncmp(buf, "VmFlags:", 8) != 0)
				continue;
			rc = 0;
			for (char *t = strtok(buf + 8, " \n"); t; t = strtok(NULL, " \n"))
				if (strcmp(t, flag) == 0)
					rc = 1;
			break;
		}
	}
	fclose(f);
	return rc;
}

#define CORE_PATTERN "/proc/sys/kernel/core_pattern"

static char core_saved[4096];
static size_t core_saved_len;
static volatile sig_atomic_t core_dirty;

/* async-signal-safe: only open/write/close */
static void core_restore(void)
{
	if (!core_dirty)
		return;
	int fd = open(CORE_PATTERN, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = core_saved_len ? write(fd, core_saved, core_saved_len) : write(fd, "\n", 1);
		(void)n;
		close(fd);
	}
	core_dirty = 0;
}

static volatile pid_t core_child;
static char core_dir[64];

static void core_restore_on_signal(int sig)
{
	/* the child must not dump under the restored pattern */
	if (core_child > 0) {
		kill(core_child, SIGKILL);
		waitpid(core_child, NULL, 0);
		rmdir(core_dir);
	}
	core_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	int rc = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return rc;
}

int tl_core_dump(int (*fn)(void *), void *arg, char *path, size_t pathlen, int *status,
		 char *why, size_t whylen)
{
	static int atexit_done;
	char dir[] = "/tmp/secretmem-core.XXXXXX", pattern[128];
	struct sigaction sa, old[3];
	const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	int rc;

	/* one test at a time may own core_pattern */
	int lock = open("/tmp/secretmem-test-core_pattern.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) != 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot lock /tmp/secretmem-test-core_pattern.lock: %s", strerror(-rc));
		if (lock >= 0)
			close(lock);
		return rc;
	}
	int fd = open(CORE_PATTERN, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, core_saved, sizeof(core_saved) - 1) : -1;
	if (n < 0) {
		rc = -errno;
		snprintf(why, whylen, "cannot read %s: %s", CORE_PATTERN, strerror(-rc));
		if (fd >= 0)
			close(fd);
		close(lock);
		return rc;
	}
	close(fd);
	core_saved[n] = '\0';
	core_saved_len = strcspn(core_saved, "\n");
	if (!mkdtemp(dir)) {
		rc = -errno;
		snprintf(why, whylen, "mkdtemp: %s", strerror(-rc));
		close(lock);
		return rc;
	}
	snprintf(pattern, sizeof(pattern), "%s/core.%%p", dir);
	snprintf(core_dir, sizeof(core_dir), "%s", dir);

	if (!atexit_done) {
		atexit(core_restore);
		atexit_done = 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = core_restore_on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	core_dirty = 1;
	rc = write_file(CORE_PATTERN, pattern);
	if (rc) {
		core_restore();
		for (int i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		rmdir(dir);
		close(lock);
		snprintf(why, whylen, "cannot write %s (%s): not root, or a read-only /proc/sys",
			 CORE_PATTERN, strerror(-rc));
		return rc;
	}

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
		if (setrlimit(RLIMIT_CORE, &rl) != 0)
			_exit(120);
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		/* dump every kind of mapping: only the library's own exclusion
		 * may keep a page out of the core */
		if (write_file("/proc/self/coredump_filter", "0x1ff") != 0)
			_exit(121);
		for (int i = 0; i < 3; i++)
			signal(sigs[i], SIG_DFL);
		tl_signal_default(SIGABRT);
		tl_signal_default(SIGSEGV);
		_exit(fn(arg));
	}
	int st = 0;
	core_child = pid;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	core_child = 0;
	core_restore();
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	close(lock);
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	*status = st;

	snprintf(path, pathlen, "%s/core.%d", dir, (int)pid);
	struct stat sb;
	if (stat(path, &sb) != 0) {
		/* core_uses_pid or another naming: any core file of this child */
		DIR *d = opendir(dir);
		char want[32];
		int found = 0;
		snprintf(want, sizeof(want), "core.%d", (int)pid);
		for (struct dirent *e; d && (e = readdir(d));) {
			if (strncmp(e->d_name, want, strlen(want)) == 0) {
				snprintf(path, pathlen, "%s/%s", dir, e->d_name);
				found = 1;
				break;
			}
		}
		if (d)
			closedir(d);
		if (!found) {
			snprintf(why, whylen, "no core file in %s (child: %s)", dir, tl_status_str(st));
			rmdir(dir);
			return -ENOENT;
		}
	}
	return 0;
}

void tl_core_remove(const char *path)
{
	char dir[4096];

	unlink(path);
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		rmdir(dir);
	}
}

/* Streaming search: keeps the last nlen-1 bytes seen between chunks. */
struct tl_scan {
	unsigned char *buf;
	size_t carry, nlen, cap;
	const void *needle;
	int found;
};

static void scan_feed(struct tl_scan *s, const unsigned char *p, size_t len, int zeros)
{
	while (len > 0 && !s->found) {
		size_t room = s->cap - s->carry, take = len < room ? len : room;
		if (zeros)
			memset(s->buf + s->carry, 0, take);
		else
			memcpy(s->buf + s->carry, p, take);
		size_t have = s->carry + take;
		if (memmem(s->buf, have, s->needle, s->nlen))
			s->found = 1;
		size_t keep = s->nlen - 1 < have ? s->nlen - 1 : have;
		memmove(s->buf, s->buf + have - keep, keep);
		s->carry = keep;
		if (!zeros)
			p += take;
		len -= take;
	}
}

int tl_file_contains(const char *path, const void *needle, size_t nlen)
{
	enum { CHUNK = 1 << 20 };
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (nlen == 0) {
		close(fd);
		return 1;
	}
	if (fstat(fd, &sb) != 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	struct tl_scan s = { malloc(CHUNK + nlen), 0, nlen, CHUNK + nlen, needle, 0 };
	unsigned char *chunk = malloc(CHUNK);
	if (!s.buf || !chunk)
		TL_FAIL("out of memory");
	off_t pos = 0, end = sb.st_size;
	int rc = 0;
	while (pos < end && !s.found && !rc) {
		off_t data = lseek(fd, pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			data = end; /* only a hole is left */
		else if (data < 0)
			data = pos; /* no SEEK_DATA here: read everything */
		off_t hole = data < end ? lseek(fd, data, SEEK_HOLE) : end;
		if (hole < 0 || hole > end)
			hole = end;
		if (data > pos) /* zeros of the hole; nlen of them stand for any run */
			scan_feed(&s, NULL, (size_t)(data - pos) < nlen ? (size_t)(data - pos) : nlen, 1);
		for (pos = data; pos < hole && !s.found;) {
			size_t want = hole - pos < CHUNK ? (size_t)(hole - pos) : CHUNK;
			ssize_t got = pread(fd, chunk, want, pos);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				rc = got < 0 ? -errno : -EIO;
				break;
			}
			scan_feed(&s, chunk, (size_t)got, 0);
			pos += got;
		}
	}
	free(chunk);
	free(s.buf);
	close(fd);
	return rc ? rc : s.found;
}

/* ---- added for the allocator tests (h7) ------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define TL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_ASAN 1
#endif
#endif
#ifdef TL_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define TL_VALGRIND_H 1
#endif
#endif

void tl_unpoison(const void *p, size_t len)
{
#ifdef TL_ASAN
	ASAN_UNPOISON_MEMORY_REGION(p, len);
#endif
#ifdef TL_VALGRIND_H
	(void)VALGRIND_MAKE_MEM_DEFINED(p, len);
#endif
	(void)p;
	(void)len;
}

void tl_no_core(void)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
}

int tl_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *s = text; (s = strstr(s, line)); s++)
		if ((s == text || s[-1] == '\n') && (s[n] == '\n' || s[n] == '\0'))
			return 1;
	return 0;
}

struct fatal_call {
	int (*fn)(void *);
	void *arg;
};

static int fatal_child(void *arg)
{
	struct fatal_call *c = arg;

	tl_no_core();
	tl_signal_default(SIGABRT);
	return c->fn(c->arg);
}

void tl_expect_fatal(const char *name, int (*fn)(void *), void *arg, const char *line)
{
	static char out[16384];
	struct fatal_call c = { fn, arg };
	int st = tl_run_child(fatal_child, &c, out, sizeof(out));

	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !tl_has_line(out, line))
		TL_FAIL("%s: expected SIGABRT with the line \"%s\"; got %s, output:\n%s", name, line,
			tl_status_str(st), out);
	printf("ok: %s: SIGABRT, \"%s\"\n", name, line);
}

/* In a child about to exec: become an ordinary user under a memory-lock
 * limit of memlock bytes (see tl_run_self_user); exits 77 when that user
 * cannot run self. */
int tl_user_memlock(size_t memlock)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return -1;
	rl.rlim_cur = memlock;
	if (geteuid() == 0)
		rl.rlim_max = memlock;
	else if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < memlock)
		rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

static void become_user(const char *self, size_t memlock)
{
	tl_user_memlock(memlock);
	/* root's working directory (a build tree) may be out of reach */
	if (geteuid() == 0 && (chdir("/") != 0 || setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
		fprintf(stderr, "skip: cannot become uid 65534: %s\n", strerror(errno));
		_exit(77);
	}
	if (access(self, X_OK) != 0) {
		fprintf(stderr, "skip: uid %u cannot run %s (%s): the build tree is out of its reach\n",
			(unsigned)getuid(), self, strerror(errno));
		_exit(77);
	}
}

static int run_self(const char *self, const char *arg, const char *const *env, char *out, size_t outlen,
		    size_t user_memlock)
{
	int fds[2], status = 0;

	fflush(stdout);
	fflush(stderr);
	if (pipe(fds) != 0)
		TL_FAIL("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		for (size_t i = 0; env && env[i]; i++)
			putenv(strdup(env[i]));
		if (user_memlock)
			become_user(self, user_memlock);
		char *argv[3] = { strdup(self), strdup(arg), NULL };
		execv(self, argv);
		fprintf(stderr, "execv %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	read_child_output(fds[0], out, outlen);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	return status;
}

int tl_run_self(const char *self, const char *arg, const char *const *env, char *out, size_t outlen)
{
	return run_self(self, arg, env, out, outlen, 0);
}

int tl_run_self_user(const char *self, const char *arg, const char *const *env, size_t memlock, char *out,
		     size_t outlen)
{
	return run_self(self, arg, env, out, outlen, memlock);
}

int tl_maps_has(const char *s)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		TL_FAIL("fopen /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, s))
			found = 1;
	fclose(f);
	return found;
}

void tl_child_exit(int rc)
{
#ifdef HAVE_VALGRIND_H
	/* memcheck's leak check at exit would report as lost every block the
	 * parent's other threads held (their stacks are not in the child):
	 * leave through exec, which valgrind does not follow, after folding
	 * any memcheck error of the child into the status */
	if (RUNNING_ON_VALGRIND) {
		char cmd[32];
		if (VALGRIND_COUNT_ERRORS)
			rc = 99;
		snprintf(cmd, sizeof(cmd), "exit %d", rc);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	}
#endif
	_exit(rc);
}

void tl_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);

	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}
