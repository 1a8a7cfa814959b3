/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * OpenSSL's own secure-heap semantics under the module: the checks of
 * OpenSSL's test/secmemtest.c (our own program, test/helpers/ossl_probe
 * secmem) - init/initialized/done, used() and actual_size() in OpenSSL's
 * block sizes, OPENSSL_secure_malloc(0) non-NULL in the arena, a request
 * larger than the arena NULL, freed blocks cleared - pass against plain
 * OpenSSL and in modes secure and all, where the program expects the
 * deliberate differences listed in secretmem-preload(7): allocated() is 1
 * for every block in secret memory (blocks from before init; in mode all
 * OPENSSL_malloc() blocks), the arena grows, and an invalid size is 0
 * instead of OpenSSL's assertion.
 */
#include <stdio.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static void run(const char *mode)
{
	char log[300];
	const char *args[] = { "secmem", mode ? mode : "plain", NULL };

	snprintf(log, sizeof(log), "%s/secmem-%s.log", rig_tmpdir(), mode ? mode : "plain");
	int rc = probe_run(mode, NULL, 0, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0 && rig_file_has(log, "secmemtest checks, mode ") && rig_file_has(log, ": passed"),
		 "mode %s: the secmemtest checks failed", mode ? mode : "plain");
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"), "a warning");
}

int main(void)
{
	probe_path();
	run(NULL);
	tl_need_secretmem();
	run("secure");
	run("all");
	printf("OpenSSL's secure-heap semantics: plain, secure and all\n");
	return 0;
}
