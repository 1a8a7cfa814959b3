/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_sandbox_late - a seccomp filter installed after the library was
 * used with secret memory (issue 10, items 1 and 2).
 *
 * For each filter action on memfd_secret(2) - ERRNO(EPERM), ERRNO(ENOSYS),
 * KILL_PROCESS, TRAP - in a fresh child that used secret memory first:
 *  - the process lives through every creation that needs a new mapping
 *    (a region, a large block, a new allocator chunk) and through fork()
 *    (the child of a fork lives too and exits normally);
 *  - that memory is fallback memory and it is visible: exactly one warning
 *    line on stderr, secretmem_supported() and secretmem_default_backend()
 *    and stats.backend tell, stats.fallback_bytes counts it,
 *    stats.last_failure says SANDBOX (or NOSYS);
 *  - secretmem_set_require(1) then makes such a creation fail with the
 *    filter's errno (EPERM for the killing actions);
 *  - a SIGSYS handler of the program never runs for the library's calls.
 * The filters are raw BPF programs (no libseccomp).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

struct lcase {
	const char *name;
	unsigned int action; /* SECCOMP_RET_* for memfd_secret */
	int want;            /* errno of a refused creation under REQUIRE */
	int cause;           /* stats.last_failure */
	int handler;         /* the program has a SIGSYS handler of its own */
};

static volatile sig_atomic_t sigsys_seen;

static void on_sigsys(int sig)
{
	(void)sig;
	sigsys_seen++;
}

static int install(unsigned int action)
{
	return tl_seccomp_action(SYS_memfd_secret, action);
}

static void get_stats(struct secretmem_stats *st)
{
	TL_CHECK(secretmem_stats(st) == 0, "secretmem_stats");
}

static int run_case(void *arg)
{
	const struct lcase *c = arg;
	struct secretmem_stats st;

	tl_need_secretmem();
	/* first use, with secret memory: small blocks, a large one, a region */
	void *small = secretmem_malloc(32), *large = secretmem_malloc(64 << 10);
	struct secretmem_region *r0 = secretmem_region_create(4096, 0);
	TL_CHECK(small && large && r0, "%s: first use failed: %s", c->name, strerror(errno));
	TL_CHECK(secretmem_region_backend(r0) == SECRETMEM_BACKEND_SECRET, "%s: first region not secret", c->name);
	get_stats(&st);
	TL_CHECK(st.fallback_bytes == 0 && st.secret_bytes == st.bytes_mapped + st.api_region_bytes,
		 "%s: before: secret %zu fallback %zu mapped %zu regions %zu", c->name, st.secret_bytes,
		 st.fallback_bytes, st.bytes_mapped, st.api_region_bytes);

	if (c->handler) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_sigsys;
		sigaction(SIGSYS, &sa, NULL);
	}
	if (install(c->action) != 0)
		TL_FAIL("%s: seccomp filter: %s", c->name, strerror(errno));

	/* every creation that needs a new mapping: the process lives */
	struct secretmem_region *r1 = secretmem_region_create(8192, 0);
	TL_CHECK(r1, "%s: region after the filter: %s", c->name, strerror(errno));
	TL_CHECK(secretmem_region_backend(r1) == SECRETMEM_BACKEND_FALLBACK, "%s: region backend %s", c->name,
		 secretmem_backend_name(secretmem_region_backend(r1)));
	void *large2 = secretmem_malloc(256 << 10);
	TL_CHECK(large2, "%s: large block after the filter: %s", c->name, strerror(errno));
	get_stats(&st);
	size_t created = st.regions_created;
	void *blocks[4096];
	size_t n = 0;
	while (n < sizeof(blocks) / sizeof(blocks[0])) {
		blocks[n] = secretmem_malloc(4096);
		TL_CHECK(blocks[n], "%s: block %zu after the filter: %s", c->name, n, strerror(errno));
		n++;
		get_stats(&st);
		if (st.regions_created > created + 1)
			break;
	}
	TL_CHECK(st.regions_created > created + 1, "%s: no new chunk after %zu blocks", c->name, n);

	/* all of it is visible */
	TL_CHECK(secretmem_supported() == -c->want, "%s: secretmem_supported() = %d, want -%d", c->name,
		 secretmem_supported(), c->want);
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_FALLBACK, "%s: default backend %s", c->name,
		 secretmem_backend_name(secretmem_default_backend()));
	TL_CHECK(st.backend == SECRETMEM_BACKEND_FALLBACK, "%s: stats.backend %s", c->name,
		 secretmem_backend_name(st.backend));
	TL_CHECK(st.fallback_bytes >= 8192 + (256 << 10) + 4096, "%s: stats.fallback_bytes %zu", c->name,
		 st.fallback_bytes);
	TL_CHECK(st.secret_bytes + st.fallback_bytes == st.bytes_mapped + st.api_region_bytes,
		 "%s: secret %zu + fallback %zu != mapped %zu + regions %zu", c->name, st.secret_bytes,
		 st.fallback_bytes, st.bytes_mapped, st.api_region_bytes);
	TL_CHECK(st.last_failure == (size_t)c->cause, "%s: stats.last_failure %zu, want %d", c->name,
		 st.last_failure, c->cause);

	/* a fork: parent and child live (the child cannot copy: it follows
	 * the documented failure path) */
	fflush(NULL);
	pid_t pid = fork();
	TL_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		tl_child_exit(0);
	int status;
	TL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	TL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: forked child: %s", c->name,
		 tl_status_str(status));

	/* REQUIRE now: creation fails, the process lives */
	TL_CHECK(secretmem_set_require(1) == 0, "set_require(1)");
	errno = 0;
	struct secretmem_region *r2 = secretmem_region_create(4096, 0);
	TL_CHECK(!r2 && errno == c->want, "%s: region under REQUIRE: %p errno %s", c->name, (void *)r2,
		 strerror(errno));
	errno = 0;
	void *large3 = secretmem_malloc(1 << 20);
	TL_CHECK(!large3 && errno == c->want, "%s: large block under REQUIRE: %p errno %s", c->name, large3,
		 strerror(errno));
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_NONE, "%s: default backend under REQUIRE %s",
		 c->name, secretmem_backend_name(secretmem_default_backend()));

	for (size_t i = 0; i < n; i++)
		secretmem_free(blocks[i]);
	secretmem_free(large2);
	secretmem_free(large);
	secretmem_free(small);
	secretmem_region_destroy(r1);
	secretmem_region_destroy(r0);
	/* the library's calls never ran the program's SIGSYS handler (in the
	 * child it shares memory with, the handler's count would show) */
	TL_CHECK(sigsys_seen == 0, "%s: the program's SIGSYS handler ran %d times for the library's calls", c->name,
		 (int)sigsys_seen);
	printf("%s: lived, fallback visible, REQUIRE refuses with %s\n", c->name, strerror(c->want));
	return 0;
}

static int count(const char *out, const char *s)
{
	int k = 0;

	for (const char *p = out; (p = strstr(p, s)); p += strlen(s))
		k++;
	return k;
}

int main(void)
{
	static const struct lcase cases[] = {
		{ "ERRNO(EPERM)", SECCOMP_RET_ERRNO | EPERM, EPERM, SECRETMEM_FAILURE_SANDBOX, 0 },
		{ "ERRNO(ENOSYS)", SECCOMP_RET_ERRNO | ENOSYS, ENOSYS, SECRETMEM_FAILURE_NOSYS, 0 },
		{ "KILL_PROCESS", SECCOMP_RET_KILL_PROCESS, EPERM, SECRETMEM_FAILURE_SANDBOX, 0 },
		{ "KILL_THREAD", SECCOMP_RET_KILL_THREAD, EPERM, SECRETMEM_FAILURE_SANDBOX, 0 },
		{ "TRAP", SECCOMP_RET_TRAP, EPERM, SECRETMEM_FAILURE_SANDBOX, 0 },
		{ "TRAP, the program handles SIGSYS", SECCOMP_RET_TRAP, EPERM, SECRETMEM_FAILURE_SANDBOX, 1 },
	};
	static char out[65536];

	if (tl_under_valgrind())
		tl_skip("valgrind answers memfd_secret(2) itself; a filter's action does not reach it");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = tl_run_child(run_case, (void *)(uintptr_t)&cases[i], out, sizeof(out));
		if (WIFEXITED(st) && WEXITSTATUS(st) == TL_SKIP) {
			fputs(out, stdout);
			tl_skip_kernel("no memfd_secret here: nothing to fall back from");
		}
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %s: %s\n%s", cases[i].name, tl_status_str(st),
			 out);
		int w = count(out, "secretmem: warning: secret memory became unavailable after first use");
		TL_CHECK(w == 1, "case %s: %d fallback warnings, want exactly 1:\n%s", cases[i].name, w, out);
		fputs(out, stdout);
	}
	return TL_PASS;
}
