/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_isolation - another process, as root, cannot read a secret region.
 *
 * A child holds a secret region and an ordinary malloc buffer, each filled
 * with its own pattern.  The parent (root) reads both with /proc/PID/mem,
 * process_vm_readv and ptrace PEEKDATA: every read of the region must fail
 * (EIO, EFAULT, an error) and every read of the ordinary buffer must succeed
 * and match, which shows the readers work and the test can tell.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define LEN 4096
#define SEED_SECRET 0x5ec7e75ec7e7ull
#define SEED_PLAIN 0x0bd1a7a0bd1a7aull

struct addrs {
	void *secret;
	void *plain;
	int backend;
};

static int to_parent[2], to_child[2];

static int child(void)
{
	struct secretmem_region *r = secretmem_region_create(LEN, SECRETMEM_REGION_REQUIRE_SECRET);
	struct addrs a = { NULL, NULL, 0 };
	char go;

	if (r) {
		a.secret = secretmem_region_data(r);
		a.backend = secretmem_region_backend(r);
		tl_fill(a.secret, LEN, SEED_SECRET);
	}
	a.plain = malloc(LEN);
	if (a.plain)
		tl_fill(a.plain, LEN, SEED_PLAIN);
	if (write(to_parent[1], &a, sizeof(a)) != (ssize_t)sizeof(a))
		return 2;
	/* wait until the parent has tried everything (or died) */
	while (read(to_child[0], &go, 1) < 0 && errno == EINTR)
		;
	if (!r || !a.plain)
		return 3;
	/* the owner itself still reads both, unchanged */
	if (!tl_check(a.secret, LEN, SEED_SECRET) || !tl_check(a.plain, LEN, SEED_PLAIN))
		return 4;
	free(a.plain);
	return secretmem_region_destroy(r) == 0 ? 0 : 5;
}

int main(void)
{
	unsigned char *buf = malloc(LEN), *secret_pat = malloc(LEN);
	struct addrs a;
	int status, rc;
	long word;

	tl_need_secretmem();
	if (!buf || !secret_pat || pipe(to_parent) || pipe(to_child))
		TL_FAIL("setup: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		TL_FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		_exit(child());
	}
	close(to_parent[1]);
	close(to_child[0]);
	if (read(to_parent[0], &a, sizeof(a)) != (ssize_t)sizeof(a))
		TL_FAIL("child did not report its addresses");
	if (!a.secret || !a.plain) {
		kill(pid, SIGKILL);
		TL_FAIL("child could not create the region (%p) or buffer (%p)", a.secret, a.plain);
	}
	TL_CHECK(a.backend == SECRETMEM_BACKEND_SECRET, "backend %d", a.backend);
	tl_fill(secret_pat, LEN, SEED_SECRET);

	/* the ordinary buffer: every reader works */
	memset(buf, 0, LEN);
	rc = tl_read_proc_mem(pid, a.plain, buf, LEN);
	TL_CHECK(rc == 0, "/proc/PID/mem of an ordinary buffer: %s", strerror(-rc));
	TL_CHECK(tl_check(buf, LEN, SEED_PLAIN), "/proc/PID/mem read wrong bytes of the ordinary buffer");
	memset(buf, 0, LEN);
	rc = tl_read_vm(pid, a.plain, buf, LEN);
	TL_CHECK(rc == 0, "process_vm_readv of an ordinary buffer: %s", strerror(-rc));
	TL_CHECK(tl_check(buf, LEN, SEED_PLAIN), "process_vm_readv read wrong bytes of the ordinary buffer");
	word = 0;
	rc = tl_read_ptrace(pid, a.plain, &word);
	TL_CHECK(rc == 0, "ptrace PEEKDATA of an ordinary buffer: %s", strerror(-rc));
	TL_CHECK(tl_check(&word, sizeof(word), SEED_PLAIN), "PEEKDATA read a wrong word of the ordinary buffer");

	/* the secret region: every reader fails, nothing of it comes back */
	memset(buf, 0, LEN);
	rc = tl_read_proc_mem(pid, a.secret, buf, LEN);
	TL_CHECK(rc == -EIO, "/proc/PID/mem of the secret region gave %s, want EIO",
		 rc ? strerror(-rc) : "success");
	TL_CHECK(!tl_contains(buf, LEN, secret_pat, 16), "/proc/PID/mem leaked secret bytes");
	memset(buf, 0, LEN);
	rc = tl_read_vm(pid, a.secret, buf, LEN);
	TL_CHECK(rc == -EFAULT, "process_vm_readv of the secret region gave %s, want EFAULT",
		 rc ? strerror(-rc) : "success");
	TL_CHECK(!tl_contains(buf, LEN, secret_pat, 16), "process_vm_readv leaked secret bytes");
	word = 0;
	rc = tl_read_ptrace(pid, a.secret, &word);
	TL_CHECK(rc != 0, "ptrace PEEKDATA of the secret region succeeded (word %#lx)", (unsigned long)word);
	TL_CHECK(memcmp(&word, secret_pat, sizeof(word)) != 0, "ptrace PEEKDATA leaked a secret word");
	printf("secret region: /proc/PID/mem EIO, process_vm_readv EFAULT, PEEKDATA %s\n", strerror(-rc));

	/* the child checks its own view and exits cleanly */
	if (write(to_child[1], "g", 1) != 1)
		TL_FAIL("write to child: %s", strerror(errno));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			TL_FAIL("waitpid: %s", strerror(errno));
	TL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s", tl_status_str(status));
	free(buf);
	free(secret_pat);
	return TL_PASS;
}
