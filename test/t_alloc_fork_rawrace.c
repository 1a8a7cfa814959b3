/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_rawrace - a raw fork (syscall(SYS_fork), no handlers) made
 * by one thread while another thread's fork() runs the library's handlers,
 * over a 32 MiB heap (4 MiB for an ordinary user), under copy and share.
 * What secretmem(7), FORK POLICIES, says such a child finds:
 *  - copy: never the parent's secret pages; possibly the descriptor of the
 *    copy being made for fork()'s child (and, rarely, one window of that
 *    copy), until its first allocator call, exec or exit;
 *  - share: the parent's secret pages, shared, when it was made while the
 *    handlers had them MADV_DOFORK;
 *  - either way, after its first allocation: not the parent's pages, and
 *    the allocation works.
 * The counts of children that held each are printed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define HEAP ((size_t)32 << 20)
#define HEAP_USER ((size_t)4 << 20) /* under an ordinary user's 8 MiB limit */
#define BLOCK 65536

static atomic_int stop;
static char mapsbuf[1 << 18];

static uintptr_t parent_block; /* an address of the parent's heap */

/* Raw system calls only: this runs in a child of a threaded process.  1 if
 * a secret memory mapping (at = 0) or the one holding address at exists. */
static int has_secret_mapping(uintptr_t at)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		long r = syscall(SYS_read, fd, mapsbuf + n, sizeof(mapsbuf) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	syscall(SYS_close, fd);
	mapsbuf[n] = '\0';
	for (char *line = mapsbuf; *line;) {
		char *end = strchr(line, '\n'), *p = line;
		if (end)
			*end = '\0';
		uintptr_t lo = 0, hi = 0;
		for (; *p && *p != '-'; p++)
			lo = lo * 16 + (uintptr_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
		for (p++; *p && *p != ' '; p++)
			hi = hi * 16 + (uintptr_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
		if (strstr(line, "/secretmem") && (!at || (at >= lo && at < hi)))
			return 1;
		if (!end)
			break;
		line = end + 1;
	}
	return 0;
}

static int has_secret_fd(void)
{
	char path[64], target[256];

	for (int fd = 3; fd < 1024; fd++) {
		int len = 0;
		for (const char *s = "/proc/self/fd/"; *s; s++)
			path[len++] = *s;
		char digits[12];
		int d = 0;
		for (int v = fd; v; v /= 10)
			digits[d++] = (char)('0' + v % 10);
		while (d)
			path[len++] = digits[--d];
		path[len] = '\0';
		long r = syscall(SYS_readlinkat, AT_FDCWD, path, target, sizeof(target) - 1);
		if (r <= 0)
			continue;
		target[r] = '\0';
		if (strstr(target, "secretmem"))
			return 1;
	}
	return 0;
}

/* Exit code: 1 the parent's pages, 2 a secret descriptor (before any
 * call); 4, 8 the same after an allocation; 16 the allocation failed; 32 a
 * secret mapping that is not the parent's heap (a window of the copy). */
static int raw_child(void)
{
	int code = 0;

	if (has_secret_mapping(parent_block) == 1)
		code |= 1;
	else if (has_secret_mapping(0) == 1)
		code |= 32;
	if (has_secret_fd())
		code |= 2;
	unsigned char *p = secretmem_malloc(100);
	if (!p)
		code |= 16;
	else
		memset(p, 1, 100);
	if (has_secret_mapping(parent_block) == 1)
		code |= 4;
	if (has_secret_fd())
		code |= 8;
	return code;
}

static void *forker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return NULL;
}

static int run(int policy, const char *name, void **blocks, size_t nblocks)
{
	pthread_t t;
	int counts[64] = { 0 }, total = 0;
	struct timespec t0, t1;

	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, policy) == 0, "set_option");
	atomic_store(&stop, 0);
	TL_CHECK(pthread_create(&t, NULL, forker, NULL) == 0, "pthread_create");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pid_t pid = (pid_t)syscall(SYS_fork);
		if (pid == 0)
			_exit(raw_child());
		TL_CHECK(pid > 0, "raw fork: %s", strerror(errno));
		int st;
		while (waitpid(pid, &st, 0) < 0)
			TL_CHECK(errno == EINTR, "waitpid");
		TL_CHECK(WIFEXITED(st), "%s: raw child %s", name, tl_status_str(st));
		counts[WEXITSTATUS(st) & 63]++;
		total++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (t1.tv_sec - t0.tv_sec < 4);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	int mapped = 0, fds = 0, after = 0, fds_after = 0, failed = 0, windows = 0;
	for (int c = 0; c < 64; c++) {
		mapped += c & 1 ? counts[c] : 0;
		fds += c & 2 ? counts[c] : 0;
		after += c & 4 ? counts[c] : 0;
		fds_after += c & 8 ? counts[c] : 0;
		failed += c & 16 ? counts[c] : 0;
		windows += c & 32 ? counts[c] : 0;
	}
	printf("%s: %d raw children; before their first allocation %d held the parent's secret pages, "
	       "%d another secret mapping (a window of the copy, or another of the parent's), "
	       "%d a secret memory descriptor; after it %d the parent's pages, %d a descriptor\n",
	       name, total, mapped, windows, fds, after, fds_after);
	TL_CHECK(!failed, "%s: %d raw children could not allocate", name, failed);
	TL_CHECK(!after, "%s: %d raw children kept the parent's secret pages after their first allocation", name, after);
	if (policy == SECRETMEM_FORK_COPY)
		TL_CHECK(!mapped, "%s: %d raw children held the parent's secret pages", name, mapped);
	for (size_t i = 0; i < nblocks; i++)
		TL_CHECK(tl_check(blocks[i], BLOCK, i), "%s: the parent's block %zu changed", name, i);
	return 0;
}

int main(void)
{
	static void *blocks[HEAP / BLOCK];
	size_t n = (geteuid() == 0 ? HEAP : HEAP_USER) / BLOCK;

#if defined(__SANITIZE_THREAD__)
	tl_skip("ThreadSanitizer does not know a child made by a raw fork system call: it reports the child's "
		"accesses as races with the parent's threads");
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	tl_skip("ThreadSanitizer does not know a child made by a raw fork system call: it reports the child's "
		"accesses as races with the parent's threads");
#endif
#endif
	tl_need_secretmem();
	printf("heap: %zu MiB\n", n * BLOCK >> 20);
	for (size_t i = 0; i < n; i++) {
		blocks[i] = secretmem_malloc(BLOCK);
		TL_CHECK(blocks[i], "malloc: %s", strerror(errno));
		tl_fill(blocks[i], BLOCK, i);
	}
	parent_block = (uintptr_t)blocks[0];
	run(SECRETMEM_FORK_COPY, "copy", blocks, n);
	run(SECRETMEM_FORK_SHARE, "share", blocks, n);
	for (size_t i = 0; i < n; i++)
		secretmem_free(blocks[i]);
	return TL_PASS;
}
