/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_strict - seccomp strict mode (issue 10, item 11).  Nothing can be
 * probed in strict mode (only read, write, _exit and sigreturn are allowed),
 * and the documentation says so instead of promising a probe that never
 * kills.  This test holds what the header and secretmem_supported(3) now
 * promise:
 *  - secretmem_supported() called first in strict mode: the process is
 *    killed (SIGKILL; the kernel kills the offending thread, here the only
 *    one);
 *  - memory mapped before strict mode stays usable: a block from the thread
 *    cache is handed out and freed without a system call;
 *  - the library's next new mapping in strict mode kills the process;
 *  - the header and the man page state both.
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static void strict(void)
{
	fflush(NULL);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0)
		_exit(3);
}

static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		syscall(SYS_exit, 4);
}

static int probe_first(void *arg)
{
	(void)arg;
	strict();
	int rc = secretmem_supported();
	say(rc == 0 ? "survived: 0\n" : "survived: error\n");
	syscall(SYS_exit, 0);
	return 0;
}

static int used_before(void *arg)
{
	(void)arg;
	void *a = secretmem_malloc(32), *b = secretmem_malloc(32);
	if (!a || !b)
		return 2;
	secretmem_free(b); /* b's slot waits in this thread's cache */
	strict();
	unsigned char *c = secretmem_malloc(32);
	if (c) {
		c[0] = 1;
		secretmem_free(c);
		say("cached block ok\n");
	}
	void *big = secretmem_malloc(1 << 20); /* a new mapping */
	say(big ? "new mapping survived\n" : "new mapping failed\n");
	syscall(SYS_exit, 0);
	return 0;
}

/* text of a source file of the tree ("" if unreadable) */
static const char *slurp(const char *rel, char *buf, size_t len)
{
	char path[512];
	const char *f = __FILE__; /* test/t_core_strict.c, relative to the tree */
	const char *slash = strrchr(f, '/');

	snprintf(path, sizeof(path), "%.*s../%s", slash ? (int)(slash - f + 1) : 0, f, rel);
	FILE *fp = fopen(path, "r");
	buf[0] = '\0';
	if (!fp)
		return buf;
	size_t n = fread(buf, 1, len - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}


int main(void)
{
	static char out[4096], text[1 << 17];

#ifdef TL_TSAN
	/* strict mode kills the offending thread only; the runtime's
	 * background thread would keep the process (and the pipe) alive */
	tl_skip("ThreadSanitizer runs a thread of its own: strict mode would kill only the main thread");
#endif

	int st = tl_run_child(probe_first, NULL, out, sizeof(out));
	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "secretmem_supported() in strict mode: %s (%s)",
		 tl_status_str(st), out);
	printf("secretmem_supported() first called in strict mode: killed, as documented\n");

	st = tl_run_child(used_before, NULL, out, sizeof(out));
	TL_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "new mapping in strict mode: %s (%s)",
		 tl_status_str(st), out);
	TL_CHECK(strstr(out, "cached block ok"), "a cached block in strict mode did not work: %s", out);
	printf("mapped before strict mode: usable; next new mapping: killed, as documented\n");

	const char *h = slurp("include/secretmem.h", text, sizeof(text));
	if (!*h)
		tl_skip("the source tree is not here: cannot check the documentation");
	TL_CHECK(strstr(h, "Seccomp strict mode") && strstr(h, "nothing\n * can be probed"),
		 "include/secretmem.h does not say that nothing can be probed in strict mode");
	const char *m = slurp("man/man3/secretmem_supported.3", text, sizeof(text));
	TL_CHECK(strstr(m, "nothing can be probed there") && strstr(m, "next call that needs a new mapping"),
		 "secretmem_supported(3) does not describe strict mode");
	printf("header and secretmem_supported(3) say so\n");
	return TL_PASS;
}
