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
 *     SECRETMEM_REQUIRE=1: the warning says that, not the limit.
 */
#include <errno.h>
#include <linux/seccomp.h>
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
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1, "mode %s: want exactly one warning", mode);
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

/* memfd_secret refused by a filter, SECRETMEM_REQUIRE=1: the warning says
 * so (it named the memory-lock limit, or the kernel). */
static int require_refused(void *arg)
{
	char log[300];
	const char *args[] = { "sizemax", NULL };

	(void)arg;
	snprintf(log, sizeof(log), "%s/require.log", rig_tmpdir());
	TL_CHECK(tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_ERRNO | EPERM) == 0, "filter");
	probe_run("secure", "SECRETMEM_REQUIRE=1", 0, log, args);
	rig_cat(log);
	TL_CHECK(rig_file_has(log, "memfd_secret(2) is not usable here (Operation not permitted") &&
		 rig_file_has(log, "SECRETMEM_REQUIRE=1 forbids"), "the warning does not state the true cause");
	TL_CHECK(!rig_file_has(log, "memory-lock limit"), "the warning blames the memory-lock limit");
	return 0;
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
	if (!rig_preload_sanitizer()) /* the sanitizer runtime reserves address space */
		asrefuse("secure");
	int st = tl_run_child(require_refused, NULL, NULL, 0);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "SECRETMEM_REQUIRE=1 under a filter: %s", tl_status_str(st));
	printf("impossible requests change nothing; refusals state their cause and end when memory is back\n");
	return 0;
}
