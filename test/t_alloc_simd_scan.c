/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_alloc_simd_scan - the library's own copies of secret data leave nothing
 * in vector registers (issue 10, item 3).
 *
 * A 512-byte secret is generated straight into secret memory (a volatile
 * byte loop: no vector register ever holds it), then copied by
 * secretmem_realloc, secretmem_strdup or secretmem_strndup.  Right after,
 * a signal with a handler is delivered deep in the stack: the kernel saves
 * every vector register in the signal frame, on the ordinary stack.  Then
 *  - live: root (this test) reads every readable mapping of the process
 *    through /proc/PID/mem and looks for the secret's 32 pieces of 16
 *    bytes: 0 must be found;
 *  - core: the process abort()s right after the signal; its core dump
 *    (memory and register notes) must hold 0 pieces.
 * A control makes the same copy with glibc's memcpy and must be found, or
 * the test could not see what it is looking for.  The secret's value is
 * only ever computed in a short-lived scanner process, so that no process
 * under test inherits it (in memory or in registers) from this one.
 * Not under a sanitizer (their interceptors copy with vector registers) nor
 * under valgrind.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#define SECRET_LEN 512
#define PIECE 16
#define NPIECES (SECRET_LEN / PIECE)

enum op { OP_CONTROL, OP_REALLOC, OP_STRDUP, OP_STRNDUP, OP_COUNT };
static const char *const op_name[] = { "control (glibc memcpy)", "secretmem_realloc", "secretmem_strdup",
				       "secretmem_strndup" };

static uint64_t seed_of(int op)
{
	return 0x9e3779b97f4a7c15ull * (uint64_t)(op + 1);
}

/* The secret, byte by byte: never zero (it is also a string). */
static unsigned char secret_byte(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (unsigned char)(*x % 255 + 1);
}

/* Called through a pointer so that the compiler cannot inline the copy. */
static void *(*volatile glibc_memcpy)(void *, const void *, size_t) = memcpy;

static void on_signal(int sig)
{
	(void)sig;
}

/* Deliver a signal a few pages down the stack, where the code that runs
 * afterwards does not reach, so that its frame stays for the scan. */
__attribute__((noinline)) static void deep_raise(int depth)
{
	volatile char pad[4096];

	pad[0] = (char)depth;
	if (depth)
		deep_raise(depth - 1);
	else
		raise(SIGUSR1);
	pad[1] = pad[0];
}

/* In the process under test: make the copy, take the signal.  Returns the
 * copy (kept alive). */
static void *do_op(int op)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);

	unsigned char *s = secretmem_malloc(SECRET_LEN + 1);
	if (!s)
		exit(3);
	volatile unsigned char *vs = s;
	uint64_t x = seed_of(op);
	for (size_t i = 0; i < SECRET_LEN; i++)
		vs[i] = secret_byte(&x);
	x = 0;
	void *copy = NULL;
	switch (op) {
	case OP_CONTROL:
		copy = secretmem_malloc(SECRET_LEN);
		if (copy)
			glibc_memcpy(copy, s, SECRET_LEN);
		break;
	case OP_REALLOC:
		copy = secretmem_realloc(s, 2048); /* another class: moves */
		s = NULL;
		break;
	case OP_STRDUP:
		copy = secretmem_strdup((char *)s);
		break;
	case OP_STRNDUP:
		copy = secretmem_strndup((char *)s, SECRET_LEN);
		break;
	}
	if (!copy)
		exit(3);
	deep_raise(4);
	return copy;
}

static int core_child(void *arg)
{
	do_op((int)(intptr_t)arg);
	abort();
}

static void make_pieces(int op, unsigned char *secret)
{
	uint64_t x = seed_of(op);

	for (size_t i = 0; i < SECRET_LEN; i++)
		secret[i] = secret_byte(&x);
}

/* Pieces of the secret found in buf[0..len); marks them in found[]. */
static void search(const unsigned char *buf, size_t len, const unsigned char *secret, int *found)
{
	for (int k = 0; k < NPIECES; k++)
		if (memmem(buf, len, secret + k * PIECE, PIECE))
			found[k] = 1;
}

/* Every readable mapping of pid through /proc/PID/mem. */
static int scan_live(pid_t pid, const unsigned char *secret)
{
	char path[64], line[512];
	int found[NPIECES] = { 0 };

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *maps = fopen(path, "re");
	TL_CHECK(maps, "open %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDONLY | O_CLOEXEC);
	TL_CHECK(mem >= 0, "open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r')
			continue;
		if (strstr(line, "[vvar]") || hi - lo > (256ul << 20))
			continue;
		unsigned char *buf = malloc(hi - lo);
		TL_CHECK(buf, "malloc");
		ssize_t n = pread(mem, buf, hi - lo, (off_t)lo);
		if (n > 0)
			search(buf, (size_t)n, secret, found);
		free(buf);
	}
	fclose(maps);
	close(mem);
	int total = 0;
	for (int k = 0; k < NPIECES; k++)
		total += found[k];
	return total;
}

static int scan_core(const char *core, const unsigned char *secret)
{
	int total = 0;

	for (int k = 0; k < NPIECES; k++) {
		int rc = tl_file_contains(core, secret + k * PIECE, PIECE);
		TL_CHECK(rc >= 0, "read %s: %s", core, strerror(-rc));
		total += rc;
	}
	return total;
}

/* Run scan(pid or path) in a scanner process: the number of pieces. */
static int in_scanner(int op, pid_t pid, const char *core)
{
	fflush(NULL);
	pid_t s = fork();
	TL_CHECK(s >= 0, "fork");
	if (s == 0) {
		unsigned char secret[SECRET_LEN];
		make_pieces(op, secret);
		_exit(core ? scan_core(core, secret) : scan_live(pid, secret));
	}
	int status;
	TL_CHECK(waitpid(s, &status, 0) == s && WIFEXITED(status) && WEXITSTATUS(status) <= NPIECES,
		 "scanner: %s", tl_status_str(status));
	return WEXITSTATUS(status);
}

static int live(int op)
{
	int ready[2], go[2];

	TL_CHECK(pipe(ready) == 0 && pipe(go) == 0, "pipe");
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork");
	if (pid == 0) {
		do_op(op);
		char c = 'r';
		if (write(ready[1], &c, 1) != 1)
			_exit(4);
		if (read(go[0], &c, 1) < 0)
			_exit(4);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	char c;
	TL_CHECK(read(ready[0], &c, 1) == 1, "%s: the process under test did not get ready", op_name[op]);
	int n = in_scanner(op, pid, NULL);
	TL_CHECK(write(go[1], "g", 1) == 1, "write");
	int status;
	TL_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "%s: process under test: %s", op_name[op], tl_status_str(status));
	close(ready[0]);
	close(go[1]);
	return n;
}

static int core(int op, int *skipped)
{
	char path[512], why[256];
	int status;
	int rc = tl_core_dump(core_child, (void *)(intptr_t)op, path, sizeof(path), &status, why, sizeof(why));

	if (rc == -ENOENT)
		TL_FAIL("%s: no core dump (%s)", op_name[op], tl_status_str(status));
	if (rc < 0) {
		printf("core dump not possible here: %s\n", why);
		*skipped = 1;
		return 0;
	}
	int n = in_scanner(op, 0, path);
	tl_core_remove(path);
	return n;
}

int main(void)
{
#ifdef TL_SANITIZED
	tl_skip("sanitizer build: its interceptors copy with vector registers");
#endif
	if (tl_under_valgrind())
		tl_skip("under valgrind the registers are valgrind's");
	tl_need_secretmem();
	int fails = 0, no_core = 0;

	for (int op = 0; op < OP_COUNT; op++) {
		int l = live(op), c = core(op, &no_core);
		printf("%-24s live scan %2d of %d pieces, core dump %2d of %d%s\n", op_name[op], l, NPIECES, c,
		       NPIECES, no_core ? " (no core)" : "");
		if (op == OP_CONTROL) {
			TL_CHECK(l > 0, "control: a glibc memcpy left nothing to find: this test cannot see registers");
			TL_CHECK(no_core || c > 0, "control: nothing in the core dump: this test cannot see registers");
		} else if (l || c) {
			fails++;
		}
	}
	TL_CHECK(fails == 0, "%d operations of the library left secret bytes in vector registers", fails);
	printf("the library's copies left 0 pieces in the stack and in the core dump\n");
	return TL_PASS;
}
