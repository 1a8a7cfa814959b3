/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_heap_fork_user - fork under the heap module as an ordinary user: uid
 * 65534, no CAP_IPC_LOCK, RLIMIT_MEMLOCK 8 MiB (`ulimit -l 8192`).
 *
 *  many:  5 MiB of live heap, 100 forks; each child checks every block and
 *         allocates 1 MiB more.  (The parent used to map the child's copy
 *         beside its own heap, twice its heap under its own limit: the child
 *         lost its heap and died of SIGSEGV.)
 *  bound: the parent's locked memory during fork(): with the limit set to
 *         its locked memory plus one page, fork() works; with no page left,
 *         fork() fails with ENOMEM after one warning, and no child is left.
 *  raw:   children of _Fork() and of a raw clone(2): the inherited blocks
 *         fault, and malloc, realloc and free of new blocks work.
 *  py3, py6: multiprocessing.Pool(2) over 3 and 6 MiB of live heap under
 *         `secretmem exec --mode heap` finishes with the right result.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heaprig.h"
#include "tlib.h"

#define LIMIT ((size_t)8 << 20)
#define MAXBLK 4096

static unsigned char *blk[MAXBLK];
static size_t blen[MAXBLK];
static int nblk;

/* About live bytes of heap in blocks of several sizes, each with its own
 * pattern; the bytes that are in secret memory. */
static size_t fill(size_t live)
{
	static const size_t sizes[] = { 32, 200, 1000, 5000, 20000, 100000 };
	size_t total = 0, secret = 0;

	for (nblk = 0; total < live && nblk < MAXBLK; nblk++) {
		blen[nblk] = sizes[nblk % 6];
		blk[nblk] = malloc(blen[nblk]);
		TL_CHECK(blk[nblk], "malloc(%zu): %s", blen[nblk], strerror(errno));
		tl_fill(blk[nblk], blen[nblk], (uint64_t)nblk);
		total += blen[nblk];
		if (hr_where(blk[nblk]) == 's')
			secret += blen[nblk];
	}
	return secret;
}

static int check_all(void)
{
	for (int i = 0; i < nblk; i++)
		if (!tl_check(blk[i], blen[i], (uint64_t)i))
			return 0;
	return 1;
}

/* The child's part: every block, then 1 MiB of new blocks. */
static int child_work(void)
{
	if (!check_all())
		return 3;
	void *p[64];
	for (int i = 0; i < 64; i++) {
		p[i] = malloc(16384);
		if (!p[i])
			return 4;
		memset(p[i], i, 16384);
	}
	for (int i = 0; i < 64; i++)
		free(p[i]);
	return 0;
}

static int fork_and_wait(void)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(child_work());
	int st;
	while (waitpid(pid, &st, 0) < 0)
		TL_CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int case_many(void)
{
	size_t secret = fill((size_t)5 << 20);

	TL_CHECK(secret >= ((size_t)4 << 20), "only %zu bytes of the heap in secret memory", secret);
	printf("live heap: %d blocks, %zu bytes secret; VmLck %zu KiB\n", nblk, secret, hr_vmlck() >> 10);
	for (int i = 0; i < 100; i++) {
		int rc = fork_and_wait();
		TL_CHECK(rc == 0, "fork %d: %s %d", i, rc < 0 ? "fork() failed" : "child ended with", rc < 0 ? -rc : rc);
	}
	TL_CHECK(check_all(), "the parent's blocks changed");
	printf("100 forks: every child had every block and allocated\n");
	return 0;
}

static int case_bound(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	size_t secret = fill((size_t)3 << 20), locked = hr_vmlck();

	TL_CHECK(secret >= ((size_t)2 << 20), "only %zu bytes of the heap in secret memory", secret);
	hr_set_soft_memlock(locked + ps);
	int rc = fork_and_wait();
	TL_CHECK(rc == 0, "limit = VmLck (%zu KiB) + one page: fork %s %d", locked >> 10,
		 rc < 0 ? "failed, errno" : "child ended with", rc < 0 ? -rc : rc);
	printf("limit = VmLck + 1 page (%zu KiB): fork() gave the child its heap\n", (locked + ps) >> 10);
	hr_set_soft_memlock(hr_vmlck());
	rc = fork_and_wait();
	TL_CHECK(rc == -ENOMEM, "limit = VmLck, no room: expected fork() to fail with ENOMEM, got %d", rc);
	TL_CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "a child is left after the failed fork()");
	printf("limit = VmLck: fork() failed with ENOMEM, no child left\n");
	hr_set_soft_memlock(LIMIT);
	TL_CHECK(fork_and_wait() == 0, "fork after the limit came back");
	TL_CHECK(check_all(), "the parent's blocks changed");
	return 0;
}

static sigjmp_buf jb;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* In a raw child: 0 when reading an inherited secret block faults and new
 * blocks work. */
static unsigned char *old;

static int raw_child(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(jb, 1) == 0) {
		if (*(volatile unsigned char *)old == 0x77)
			return 10;
		return 11; /* read without a fault */
	}
	char *p = malloc(100), *q = malloc(50000);
	if (!p || !q)
		return 12;
	memset(p, 1, 100);
	memset(q, 2, 50000);
	p = realloc(p, 5000);
	if (!p || p[99] != 1 || q[49999] != 2)
		return 13;
	free(p);
	free(q);
	return 0;
}

static int case_raw(void)
{
	old = malloc(64);
	TL_CHECK(old, "malloc");
	memset(old, 0x77, 64);
	TL_CHECK(hr_where(old) == 's', "the block is not in secret memory");
	for (int how = 0; how < 2; how++) {
		fflush(stdout);
		pid_t pid = how == 0 ? _Fork() : (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, NULL);
		TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			_exit(raw_child());
		int st;
		while (waitpid(pid, &st, 0) < 0)
			TL_CHECK(errno == EINTR, "waitpid");
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s child: %s", how == 0 ? "_Fork" : "clone",
			 tl_status_str(st));
		printf("%s child: the inherited block faults, new blocks work\n", how == 0 ? "_Fork()" : "clone()");
	}
	TL_CHECK(old[63] == 0x77, "the parent's block changed");
	return 0;
}

static const char py_code[] =
	"import multiprocessing as mp, sys\n"
	"data = [bytes([i % 251]) * 1000 for i in range(int(sys.argv[1]) * 1024)]\n"
	"def f(i):\n"
	"    return sum(len(x) for x in data[i::50]) + data[i][0]\n"
	"if __name__ == '__main__':\n"
	"    with mp.get_context('fork').Pool(2) as p:\n"
	"        r = p.map(f, range(50))\n"
	"    print('pool OK' if r == [f(i) for i in range(50)] else 'pool WRONG', flush=True)\n";

static int case_py(const char *mib)
{
	char a0[] = "timeout", a1[] = "120", a3[] = "exec", a4[] = "--mode", a5[] = "heap", a6[] = "--",
	     a7[] = "python3", a8[] = "-c", cli[4096], code[sizeof(py_code)], n[8];
	snprintf(cli, sizeof(cli), "%s", tl_build_path("secretmem"));
	memcpy(code, py_code, sizeof(py_code));
	snprintf(n, sizeof(n), "%s", mib);
	char *argv[] = { a0, a1, cli, a3, a4, a5, a6, a7, a8, code, n, NULL };
	execvp("timeout", argv);
	printf("exec timeout: %s\n", strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		if (!strcmp(argv[1], "many"))
			return case_many();
		if (!strcmp(argv[1], "bound"))
			return case_bound();
		if (!strcmp(argv[1], "raw"))
			return case_raw();
		if (!strcmp(argv[1], "py3"))
			return case_py("3");
		if (!strcmp(argv[1], "py6"))
			return case_py("6");
		return 2;
	}
	tl_need_secretmem();
	hr_module();
	static const char *const cases[] = { "many", "bound", "raw", "py3", "py6" };
	static char out[1 << 16];
	int have_py = system("python3 -c pass >/dev/null 2>&1") == 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int py = cases[i][0] == 'p';
		if (py && !have_py) {
			printf("%s: skipped, no python3\n", cases[i]);
			continue;
		}
		int st = hr_run_user(argv[0], cases[i], !py, NULL, LIMIT, out, sizeof(out));
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			printf("%s", out);
			tl_skip("an ordinary user cannot run the tests here");
		}
		printf("== %s as an ordinary user (ulimit -l 8192): %s\n%s", cases[i], tl_status_str(st), out);
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cases[i]);
		TL_CHECK(!strstr(out, "could not copy") && !strstr(out, "dropped"), "%s: a child lost its heap", cases[i]);
		if (!strcmp(cases[i], "bound")) {
			const char *w = strstr(out, "fork() fails with ENOMEM");
			TL_CHECK(w && !strstr(w + 1, "fork() fails with ENOMEM"), "bound: not exactly one warning");
		}
		if (py)
			TL_CHECK(strstr(out, "pool OK"), "%s: the pool did not finish with the right result", cases[i]);
	}
	return TL_PASS;
}
