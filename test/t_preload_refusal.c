/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * A failed request changes nothing; only a real refusal of secret memory
 * leads to ordinary memory, with its true cause, and only until secret
 * memory is available again.  Under the module (modes secure and all), an
 * OpenSSL program of our own (test/helpers/ossl_probe):
 *   - asks for OPENSSL_secure_malloc(SIZE_MAX) and other impossible sizes
 *     (as root, with CAP_IPC_LOCK): they fail, no warning is printed, and
 *     the next 600 secure blocks are all secret memory;
 *   - without CAP_IPC_LOCK and with a soft RLIMIT_MEMLOCK of 128 KiB, fills
 *     secret memory: exactly one warning, naming the limit with its figure
 *     and the missing capability; blocks go to ordinary memory while
 *     nothing is freed; the first block after a free, and the first after
 *     the soft limit is raised, are secret memory again;
 *   - (mode all) asks for a block twice the limit: it alone goes to ordinary
 *     memory, the next small block is secret;
 *   - as root (CAP_IPC_LOCK) with an address-space limit just above what it
 *     uses: the warning says it is not the memory-lock limit, and names the
 *     limit that is;
 *   - under a seccomp filter that refuses memfd_secret, with
 *     SECRETMEM_REQUIRE=1: the warning says that, not the limit, and every
 *     allocation the module serves fails instead of taking ordinary memory;
 *   - SECRETMEM_REQUIRE=1 at the memory-lock limit (soft 128 KiB, no
 *     CAP_IPC_LOCK): no block the module serves is ordinary memory, the
 *     ones secret memory refuses are NULL, one warning says so, and a free
 *     makes secret memory available again.
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static void sizemax(const char *mode)
{
	char log[300];
	const char *args[] = { "sizemax", NULL };

	snprintf(log, sizeof(log), "%s/sizemax-%s.log", rig_tmpdir(), mode);
	int rc = probe_run(mode, NULL, 0, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode, rc);
	TL_CHECK(rig_file_has(log, "secret after SIZE_MAX: 600 of 600"),
		 "mode %s: after OPENSSL_secure_malloc(SIZE_MAX) secure blocks went to ordinary memory", mode);
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"),
		 "mode %s: a warning for a request that fails for its own reasons", mode);
}

static void exhaust(const char *mode, int big)
{
	char log[300];
	const char *args[] = { "exhaust", "131072", big ? "big" : NULL, NULL };

	snprintf(log, sizeof(log), "%s/exhaust-%s-%d.log", rig_tmpdir(), mode, big);
	int rc = probe_run(mode, NULL, 1024 * 1024, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode, rc);
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1 && !rig_file_has(log, "secretmem: warning"),
		 "mode %s: want exactly one warning (not the library's hint besides)", mode);
	TL_CHECK(rig_file_has(log, "RLIMIT_MEMLOCK = 131072 bytes") && rig_file_has(log, "no CAP_IPC_LOCK"),
		 "mode %s: the warning does not state the limit and the missing capability", mode);
	TL_CHECK(rig_file_has(log, "secret while refused: 0 of 20"), "mode %s: refused state not kept", mode);
	TL_CHECK(rig_file_has(log, "secret after a free: 1"), "mode %s: not secret again after a free", mode);
	TL_CHECK(rig_file_has(log, "secret after the limit was raised: 1"),
		 "mode %s: not secret again after the limit was raised", mode);
	if (big) {
		TL_CHECK(rig_file_has(log, "block larger than the limit: ordinary") &&
			 rig_file_has(log, "secret right after it: 1"),
			 "mode %s: a block larger than the limit changed the next one", mode);
		TL_CHECK(rig_file_has(log, "leaves too little for this block"), "mode %s: wrong cause", mode);
	} else {
		TL_CHECK(rig_file_has(log, "is used up"), "mode %s: wrong cause", mode);
	}
}

/* ossl_probe refused's "KIND: S secret, O ordinary, N NULL" line of log
 * into c[3]; 0 if it is missing. */
static int refused_counts(const char *log, const char *kind, int c[3])
{
	char line[200];
	size_t k = strlen(kind);
	FILE *f = fopen(log, "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, kind, k) == 0 &&
			sscanf(line + k, ": %d secret, %d ordinary, %d NULL", &c[0], &c[1], &c[2]) == 3;
	fclose(f);
	return found;
}

/* SECRETMEM_REQUIRE=1 under the module, mode secure or all: of the blocks
 * the module serves (secure ones; in mode all every OPENSSL_malloc too)
 * none is ordinary memory; at least `nulls` of them are NULL. */
static void require_no_ordinary(const char *log, const char *mode, int nulls)
{
	int sec[3] = { -1, -1, -1 }, pl[3] = { -1, -1, -1 };

	TL_CHECK(refused_counts(log, "secure", sec) && refused_counts(log, "plain", pl), "mode %s: no counts", mode);
	TL_CHECK(sec[1] == 0 && sec[2] >= nulls, "mode %s, SECRETMEM_REQUIRE=1: %d secure blocks in ordinary memory, %d NULL",
		 mode, sec[1], sec[2]);
	if (strcmp(mode, "all") == 0)
		TL_CHECK(pl[1] == 0 && pl[2] >= nulls,
			 "mode all, SECRETMEM_REQUIRE=1: %d OPENSSL_malloc blocks in ordinary memory, %d NULL", pl[1], pl[2]);
	else /* mode secure leaves OPENSSL_malloc to ordinary memory */
		TL_CHECK(pl[1] == 300, "mode secure: OPENSSL_malloc failed (%d ordinary)", pl[1]);
}

/* memfd_secret refused by a filter, SECRETMEM_REQUIRE=1: the warning says
 * so (it named the memory-lock limit, or the kernel), and the module's
 * allocations fail. */
static int require_refused(void *arg)
{
	char log[300];
	const char *args[] = { "refused", "0", NULL };

	(void)arg;
	TL_CHECK(tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_ERRNO | EPERM) == 0, "filter");
	for (int all = 0; all < 2; all++) {
		const char *mode = all ? "all" : "secure";
		snprintf(log, sizeof(log), "%s/require-%s.log", rig_tmpdir(), mode);
		int rc = probe_run(mode, "SECRETMEM_REQUIRE=1", 0, log, args);
		rig_cat(log);
		TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode, rc);
		TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1 &&
			 rig_file_has(log, "memfd_secret(2) is not usable here (Operation not permitted") &&
			 rig_file_has(log, "SECRETMEM_REQUIRE=1 forbids") &&
			 rig_file_has(log, "OpenSSL allocations fail instead of using ordinary memory"),
			 "mode %s: the warning does not state the true cause and its outcome", mode);
		TL_CHECK(!rig_file_has(log, "memory-lock limit"), "mode %s: the warning blames the memory-lock limit", mode);
		require_no_ordinary(log, mode, 300);
	}
	return 0;
}

/* SECRETMEM_REQUIRE=1 at the memory-lock limit: NULL, not ordinary memory,
 * until a secret block is freed. */
static void require_limit(const char *mode)
{
	char log[300];
	const char *args[] = { "refused", "131072", NULL };

	snprintf(log, sizeof(log), "%s/require-limit-%s.log", rig_tmpdir(), mode);
	int rc = probe_run(mode, "SECRETMEM_REQUIRE=1", 1024 * 1024, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode, rc);
	require_no_ordinary(log, mode, 1);
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1 &&
		 rig_file_has(log, "RLIMIT_MEMLOCK = 131072 bytes is used up") &&
		 rig_file_has(log, "under SECRETMEM_REQUIRE=1 OpenSSL allocations fail until secret memory is freed"),
		 "mode %s: want one warning naming the limit and the failing allocations", mode);
	TL_CHECK(rig_file_has(log, "secret after a free: 1"), "mode %s: not secret again after a free", mode);
}

static void asrefuse(const char *mode)
{
	char log[300];
	const char *args[] = { "asrefuse", NULL };

	snprintf(log, sizeof(log), "%s/asrefuse-%s.log", rig_tmpdir(), mode);
	int rc = probe_run(mode, NULL, 0, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0 && rig_file_has(log, "ordinary block under the address-space limit: 1"),
		 "mode %s: the probe failed (%d)", mode, rc);
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1 &&
		 rig_file_has(log, "not because of the memory-lock limit (the process has CAP_IPC_LOCK)") &&
		 rig_file_has(log, "RLIMIT_AS = "),
		 "mode %s: the warning does not state the true cause", mode);
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK for the probe program");
	probe_path();
	tl_need_secretmem();
	sizemax("secure");
	sizemax("all");
	exhaust("secure", 0);
	exhaust("all", 1);
	require_limit("secure");
	require_limit("all");
	if (!rig_preload_sanitizer()) /* the sanitizer runtime reserves address space */
		asrefuse("secure");
	int st = tl_run_child(require_refused, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_REQUIRE=1 under a filter: %s", tl_status_str(st));
	printf("impossible requests change nothing; refusals state their cause and end when memory is back; "
	       "under SECRETMEM_REQUIRE=1 they fail instead of taking ordinary memory\n");
	return 0;
}
