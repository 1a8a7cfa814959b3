/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_fallback - the fallback backend under seccomp filters, and REQUIRE.
 *
 * Each case runs in a fresh child of a parent that never called the library
 * (the probe result and the options are per process and cached):
 *  - memfd_secret filtered to ENOSYS, EPERM, EACCES: secretmem_supported()
 *    says -ENOSYS / -EPERM / -EPERM; regions still work, with the fallback
 *    backend, and say so (region and default backend); the fallback data is
 *    locked ('lo') and out of core dumps ('dd') in smaps, between PROT_NONE
 *    guard pages; SECRETMEM_REGION_REQUIRE_SECRET, secretmem_set_require(1)
 *    and SECRETMEM_REQUIRE=1 (set before the first library call) make
 *    creation fail with the matching errno; secretmem_set_require(0) wins
 *    over the environment;
 *  - a filter that kills the process: secretmem_supported() reports -EPERM
 *    (or -ENOSYS), the process lives and regions use the fallback backend;
 *  - a filter installed after a successful probe: the probe sees it, and
 *    creation falls back (t_core_sandbox_late covers the rest);
 *  - madvise refused too: the fallback could not keep its pages out of core
 *    dumps, so it makes none: regions and blocks fail with ENOMEM, and one
 *    warning says why.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

#define SENTINEL 4242

struct scase {
	const char *name;
	int filter_err;   /* errno the filter answers; 0 kills the process */
	int want;         /* errno secretmem_supported() reports (positive) */
	int env_require;  /* SECRETMEM_REQUIRE=1 before the first call */
	int after_probe;  /* install the filter after a successful probe */
};

static void check_fallback_region(const char *name)
{
	struct secretmem_region *r = secretmem_region_create(3 * 4096 - 100, 0);

	TL_CHECK(r != NULL, "%s: creation failed instead of falling back: %s", name, strerror(errno));
	TL_CHECK(secretmem_region_backend(r) == SECRETMEM_BACKEND_FALLBACK, "%s: region backend %s", name,
		 secretmem_backend_name(secretmem_region_backend(r)));
	unsigned char *d = secretmem_region_data(r);
	size_t size = secretmem_region_size(r);
	TL_CHECK(size == 3 * 4096, "%s: size %zu", name, size);
	for (size_t i = 0; i < size; i++)
		TL_CHECK(d[i] == 0, "%s: byte %zu not zero", name, i);
	tl_fill(d, size, 77);
	TL_CHECK(tl_check(d, size, 77), "%s: data does not hold", name);

	int rc = tl_has_vmflag(d, "dd");
	TL_CHECK(rc == 1, "%s: fallback data is not MADV_DONTDUMP (VmFlags dd: %d)", name, rc);
	rc = tl_has_vmflag(d, "lo");
	TL_CHECK(rc == 1, "%s: fallback data is not locked (VmFlags lo: %d)", name, rc);
	char line[512];
	TL_CHECK(tl_maps_line(d - 1, line, sizeof(line)) == 0 && strstr(line, " ---p "),
		 "%s: no PROT_NONE guard below the data", name);
	TL_CHECK(tl_maps_line(d + size, line, sizeof(line)) == 0 && strstr(line, " ---p "),
		 "%s: no PROT_NONE guard above the data", name);
	rc = secretmem_region_destroy(r);
	TL_CHECK(rc == 0, "%s: destroy: %s", name, strerror(-rc));
}

static void check_refused(const char *name, const char *how, unsigned int flags, int want)
{
	errno = 0;
	struct secretmem_region *r = secretmem_region_create(4096, flags);
	TL_CHECK(r == NULL, "%s: %s: creation succeeded (backend %s), want %s", name, how,
		 secretmem_backend_name(secretmem_region_backend(r)), strerror(want));
	TL_CHECK(errno == want, "%s: %s: errno %s, want %s", name, how, strerror(errno), strerror(want));
}

static int run_case(void *arg)
{
	const struct scase *c = arg;
	int rc;

	if (c->env_require && setenv("SECRETMEM_REQUIRE", "1", 1) != 0)
		TL_FAIL("setenv: %s", strerror(errno));
	if (c->after_probe) {
		tl_need_secretmem(); /* probes and caches 0 */
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r && secretmem_region_backend(r) == SECRETMEM_BACKEND_SECRET, "secret region before the filter");
		secretmem_region_destroy(r);
	}
	if (tl_seccomp_block(SYS_memfd_secret, c->filter_err) != 0)
		TL_FAIL("%s: seccomp filter: %s", c->name, strerror(errno));

	if (c->after_probe) {
		/* the probe sees the new filter (its count changed) */
		TL_CHECK(secretmem_supported() == -c->want, "%s: probe after the filter: %d", c->name,
			 secretmem_supported());
		check_fallback_region(c->name);
		check_refused(c->name, "REQUIRE_SECRET flag", SECRETMEM_REGION_REQUIRE_SECRET, c->want);
		TL_CHECK(secretmem_set_require(1) == 0, "set_require(1)");
		check_refused(c->name, "secretmem_set_require(1)", 0, c->want);
		printf("%s: creation fell back; require refuses with %s\n", c->name, strerror(c->want));
		return 0;
	}

	errno = SENTINEL;
	rc = secretmem_supported();
	TL_CHECK(errno == SENTINEL, "%s: secretmem_supported changed errno to %d", c->name, errno);
	if (c->filter_err)
		TL_CHECK(rc == -c->want, "%s: secretmem_supported() = %d (%s), want -%s", c->name, rc,
			 strerror(-rc), strerror(c->want));
	else
		TL_CHECK(rc == -EPERM || rc == -ENOSYS, "%s: secretmem_supported() = %d (%s), want -EPERM or -ENOSYS",
			 c->name, rc, strerror(-rc));
	int want = -rc;
	TL_CHECK(secretmem_supported() == rc, "%s: second answer differs", c->name);

	if (c->filter_err) {
		/* the raw call reports the filter's answer and leaves errno */
		errno = SENTINEL;
		int fd = secretmem_memfd(O_CLOEXEC);
		TL_CHECK(fd == -c->filter_err, "%s: secretmem_memfd = %d, want -%d", c->name, fd, c->filter_err);
		TL_CHECK(errno == SENTINEL, "%s: secretmem_memfd changed errno", c->name);
	}

	if (c->env_require) {
		TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_NONE, "%s: default backend %s, want none",
			 c->name, secretmem_backend_name(secretmem_default_backend()));
		check_refused(c->name, "SECRETMEM_REQUIRE=1", 0, want);
		check_refused(c->name, "SECRETMEM_REQUIRE=1 and flag", SECRETMEM_REGION_REQUIRE_SECRET, want);
		/* the API wins over the environment */
		TL_CHECK(secretmem_set_require(0) == 0, "set_require(0)");
	}
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_FALLBACK, "%s: default backend %s, want fallback",
		 c->name, secretmem_backend_name(secretmem_default_backend()));
	check_fallback_region(c->name);
	check_refused(c->name, "REQUIRE_SECRET flag", SECRETMEM_REGION_REQUIRE_SECRET, want);

	TL_CHECK(secretmem_set_require(1) == 0, "set_require(1)");
	TL_CHECK(secretmem_default_backend() == SECRETMEM_BACKEND_NONE, "%s: default backend %s after set_require(1)",
		 c->name, secretmem_backend_name(secretmem_default_backend()));
	check_refused(c->name, "secretmem_set_require(1)", 0, want);
	TL_CHECK(secretmem_set_require(0) == 0, "set_require(0)");
	check_fallback_region(c->name);
	printf("%s: supported() = -%s, fallback regions work, require refuses\n", c->name, strerror(want));
	return 0;
}

/* memfd_secret and madvise both refused: the fallback cannot keep its
 * pages out of core dumps, so it makes none (NULL, ENOMEM, one warning). */
static int no_dontdump(void *arg)
{
	(void)arg;
	if (tl_seccomp_block(SYS_memfd_secret, EPERM) != 0 || tl_seccomp_block(SYS_madvise, EPERM) != 0)
		TL_FAIL("seccomp filter: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		errno = 0;
		struct secretmem_region *r = secretmem_region_create(4096, 0);
		TL_CHECK(r == NULL && errno == ENOMEM, "region without MADV_DONTDUMP: %s, errno %s",
			 r ? secretmem_backend_name(secretmem_region_backend(r)) : "NULL", strerror(errno));
		errno = 0;
		void *p = secretmem_malloc(100);
		TL_CHECK(p == NULL && errno == ENOMEM, "block without MADV_DONTDUMP: %p, errno %s", p, strerror(errno));
	}
	struct secretmem_stats st;
	TL_CHECK(secretmem_stats(&st) == 0 && st.fallback_bytes == 0, "fallback bytes %zu", st.fallback_bytes);
	return 0;
}

/* Does a filter's answer for memfd_secret reach the program?  Not under
 * valgrind, which answers the call it does not know with ENOSYS itself. */
static int filter_reaches(void *arg)
{
	(void)arg;
	if (tl_seccomp_block(SYS_memfd_secret, EPERM) != 0)
		return 2;
	errno = 0;
	long rc = syscall(SYS_memfd_secret, 0);
	return rc == -1 && errno == EPERM ? 0 : 1;
}

int main(void)
{
	static const struct scase cases[] = {
		{ "filter ENOSYS", ENOSYS, ENOSYS, 0, 0 },
		{ "filter EPERM", EPERM, EPERM, 0, 0 },
		{ "filter EACCES", EACCES, EPERM, 0, 0 },
		{ "filter ENOSYS, SECRETMEM_REQUIRE=1", ENOSYS, ENOSYS, 1, 0 },
		{ "filter EPERM, SECRETMEM_REQUIRE=1", EPERM, EPERM, 1, 0 },
		{ "filter kills the process", 0, EPERM, 0, 0 },
		{ "filter kills the process, SECRETMEM_REQUIRE=1", 0, EPERM, 1, 0 },
		{ "filter ENOSYS after the probe", ENOSYS, ENOSYS, 0, 1 },
		{ "filter EPERM after the probe", EPERM, EPERM, 0, 1 },
		{ "filter EACCES after the probe", EACCES, EPERM, 0, 1 },
	};
	int skipped = 0;

	/* no library call here: every case starts from a fresh process state */
	int st = tl_run_child(filter_reaches, NULL, NULL, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 1)
		tl_skip("a seccomp filter's answer for memfd_secret(2) does not reach the program "
			"(valgrind answers the call itself)");
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "filter probe: %s", tl_status_str(st));
	char out[4096];
	st = tl_run_child(no_dontdump, NULL, out, sizeof(out));
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "madvise refused too: %s", tl_status_str(st));
	static const char warning[] = "secretmem: warning: the fallback backend cannot keep memory out of core "
				      "dumps (madvise(MADV_DONTDUMP) refused): no fallback memory is made";
	const char *w = strstr(out, warning);
	TL_CHECK(w && tl_has_line(out, warning) && !strstr(w + 1, warning), "madvise refused too: want the warning once");
	printf("memfd_secret and madvise refused: no fallback memory, one warning\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		st = tl_run_child(run_case, (void *)(uintptr_t)&cases[i], NULL, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == TL_SKIP) {
			printf("%s: skipped (no memfd_secret to probe)\n", cases[i].name);
			skipped++;
			continue;
		}
		TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case \"%s\": %s", cases[i].name, tl_status_str(st));
	}
	if (skipped)
		printf("note: %d after-probe cases need memfd_secret and were skipped\n", skipped);
	return TL_PASS;
}
