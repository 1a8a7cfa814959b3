/* tlib.c - helpers shared by the test programs; see tlib.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
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
		size_t used = 0;
		close(fds[1]);
		for (;;) {
			char tmp[512];
			ssize_t n = read(fds[0], tmp, sizeof(tmp));
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
		close(fds[0]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	return status;
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

int tl_seccomp_block(long nr, int err)
{
	unsigned int action = err ? SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)
				  : SECCOMP_RET_KILL_PROCESS;
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
