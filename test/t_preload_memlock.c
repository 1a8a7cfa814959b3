/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * A small memory-lock limit: `openssl s_server` under the module, without
 * CAP_IPC_LOCK and with RLIMIT_MEMLOCK far below what it needs in secret
 * memory, still completes real TLS handshakes; the module prints exactly one
 * warning, which names the limit, and falls back to ordinary memory for the
 * allocations that do not fit.  Both modes, and a limit of zero.
 */
#include <stdio.h>
#include <string.h>
#include "scan.h"
#include "tlib.h"

static void run(const char *mode, size_t limit, const char *type)
{
	char log[300], accept[64], want[128];
	int port = rig_free_port();

	snprintf(log, sizeof(log), "%s/memlock-%s-%zu-%s.log", rig_tmpdir(), mode, limit, type);
	snprintf(accept, sizeof(accept), "127.0.0.1:%d", port);
	rig_make_key(type);
	char *argv[] = { "openssl", "s_server", "-www", "-accept", accept, "-key",
			 (char *)(uintptr_t)rig_make_key(type), "-cert", (char *)(uintptr_t)rig_cert(type), NULL };
	pid_t pid = rig_spawn_limited(argv, rig_env(mode), log, limit);
	if (rig_wait_port(port, pid, 10000) != 0) {
		rig_cat(log);
		TL_FAIL("mode %s, limit %zu: s_server did not start", mode, limit);
	}
	for (int i = 0; i < 3; i++)
		if (rig_s_client(port, log) != 0) {
			rig_cat(log);
			TL_FAIL("mode %s, limit %zu: handshake %d failed", mode, limit, i);
		}
	rig_stop(pid);
	snprintf(want, sizeof(want), "RLIMIT_MEMLOCK = %zu bytes", limit);
	int warnings = rig_file_count(log, "secretmem-preload: warning");
	if (warnings != 1 || !rig_file_has(log, want)) {
		rig_cat(log);
		TL_FAIL("mode %s, limit %zu: %d warnings, want exactly 1 naming \"%s\"", mode, limit,
			warnings, want);
	}
	TL_CHECK(!rig_file_has(log, "secretmem: fatal"), "fatal error");
	fprintf(stderr, "mode %s, limit %zu, %s key: 3 handshakes, one warning\n", mode, limit, type);
}

int main(void)
{
	tl_need_root("drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK for the servers");
	rig_need("openssl");
	tl_need_secretmem();
	run("all", 256 * 1024, "rsa");
	run("all", 0, "ed25519");
	run("secure", 0, "rsa");
	run("secure", 4096, "ed25519");
	printf("small memory-lock limits: servers work, one warning naming the limit\n");
	return 0;
}
