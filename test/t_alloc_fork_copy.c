/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_fork_copy - fork policy "copy" (the default): the child gets
 * private copies of the secrets at the same addresses.  The child reads the
 * parent's secrets, overwrites and frees them and allocates new ones; the
 * parent's secrets stay intact, the parent's later writes are invisible to the
 * child, and the parent keeps allocating without being handed a slot the
 * child dirtied (the allocator would abort on a non-zero free slot, and this
 * test checks every new block is zero).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define N 300
#define NEW 600

static unsigned char *sec[N];
static size_t len[N];

static size_t size_for(int i)
{
	static const size_t sz[] = { 32, 200, 3000, 32, 48, 50000 };
	return sz[i % 6] + (i == 7 ? 300000 : 0);
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void xread(int fd)
{
	char c;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static void xwrite(int fd)
{
	char c = 1;
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
}

static void child(int from_parent)
{
	/* the child sees the parent's secrets (its own copies) */
	for (int i = 0; i < N; i++)
		if (!tl_check(sec[i], len[i], (uint64_t)i + 1)) {
			fprintf(stderr, "child: secret %d (%zu bytes at %p) is not what the parent held at fork time "
				"(the parent's writes after fork reached the child's copy, or it was not inherited)\n",
				i, len[i], (void *)sec[i]);
			_exit(2);
		}
	/* the parent changes sec[0] after the fork: the child must not see it */
	xread(from_parent);
	if (!tl_check(sec[0], len[0], 1)) {
		fprintf(stderr, "child: the parent's write after fork is visible in the child\n");
		_exit(3);
	}
	/* overwrite everything, free half, allocate new blocks and dirty them */
	for (int i = 0; i < N; i++)
		memset(sec[i], 0xee, len[i]);
	for (int i = 0; i < N; i += 2)
		secretmem_free(sec[i]);
	static unsigned char *mine[NEW];
	for (int i = 0; i < NEW; i++) {
		mine[i] = secretmem_malloc(size_for(i));
		if (!mine[i]) {
			fprintf(stderr, "child: malloc: %s\n", strerror(errno));
			_exit(4);
		}
		memset(mine[i], 0x77, size_for(i));
	}
	for (int i = 1; i < N; i += 4) {
		unsigned char *q = secretmem_realloc(sec[i], len[i] * 2);
		if (!q)
			_exit(5);
		memset(q, 0x66, len[i] * 2);
		sec[i] = q;
	}
	/* free what the child holds (valgrind checks the child's leaks too) */
	for (int i = 0; i < NEW; i++)
		secretmem_free(mine[i]);
	for (int i = 1; i < N; i += 2)
		secretmem_free(sec[i]);
	_exit(0);
}

static void round_trip(const char *label)
{
	int p2c[2], st;

	for (int i = 0; i < N; i++) {
		len[i] = size_for(i);
		sec[i] = secretmem_malloc(len[i]);
		TL_CHECK(sec[i], "malloc(%zu): %s", len[i], strerror(errno));
		tl_fill(sec[i], len[i], (uint64_t)i + 1);
	}
	TL_CHECK(pipe(p2c) == 0, "pipe");
	fflush(stdout);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(p2c[1]);
		child(p2c[0]);
	}
	close(p2c[0]);
	/* change sec[0] in the parent, then let the child look at its copy */
	tl_fill(sec[0], len[0], 1000);
	xwrite(p2c[1]);
	close(p2c[1]);
	TL_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child: %s", label, tl_status_str(st));

	/* the parent's secrets are untouched */
	TL_CHECK(tl_check(sec[0], len[0], 1000), "%s: sec[0] changed", label);
	for (int i = 1; i < N; i++)
		TL_CHECK(tl_check(sec[i], len[i], (uint64_t)i + 1),
			 "%s: the child's writes reached the parent's secret %d (%zu bytes at %p)", label, i, len[i],
			 (void *)sec[i]);

	/* the parent allocates what the child allocated: clean, distinct slots */
	static unsigned char *fresh[NEW];
	for (int i = 0; i < NEW; i++) {
		size_t n = size_for(i);
		fresh[i] = secretmem_malloc(n);
		TL_CHECK(fresh[i], "parent malloc(%zu) after the child: %s", n, strerror(errno));
		TL_CHECK(all_zero(fresh[i], n), "%s: parent got block %p (%zu bytes) dirtied by the child", label,
			 (void *)fresh[i], n);
		tl_fill(fresh[i], n, 5000 + (uint64_t)i);
	}
	for (int i = 0; i < N; i++)
		TL_CHECK(tl_check(sec[i], len[i], i ? (uint64_t)i + 1 : 1000), "%s: secret %d overwritten by a new block",
			 label, i);
	for (int i = 0; i < NEW; i++) {
		TL_CHECK(tl_check(fresh[i], size_for(i), 5000 + (uint64_t)i), "%s: new block %d overlaps another", label, i);
		secretmem_free(fresh[i]);
	}
	for (int i = 0; i < N; i++)
		secretmem_free(sec[i]);
	struct secretmem_stats s;
	TL_CHECK(secretmem_stats(&s) == 0 && s.live_allocations == 0, "%s: live blocks left", label);
	printf("ok: %s\n", label);
}

int main(void)
{
	tl_need_root("uses more secret memory than the memory-lock limit of a normal user (8 MiB)");
	/* any backend: the secret one here, the fallback under valgrind */
	printf("backend: %s\n", secretmem_backend_name(secretmem_default_backend()));
	TL_CHECK(secretmem_get_option(SECRETMEM_OPT_FORK) == SECRETMEM_FORK_COPY, "default fork policy %ld, expected copy",
		 secretmem_get_option(SECRETMEM_OPT_FORK));
	signal(SIGPIPE, SIG_IGN); /* a child that died early fails the test, not the pipe */
	round_trip("copy (default policy)");
	/* FORK can be changed at any time; back to copy after share */
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_SHARE) == 0, "set share");
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, SECRETMEM_FORK_COPY) == 0, "set copy");
	TL_CHECK(secretmem_set_option(SECRETMEM_OPT_FORK, 3) == -EINVAL, "set_option(FORK, 3) accepted");
	round_trip("copy (set through the API, second round, warm heap)");
	return TL_PASS;
}
