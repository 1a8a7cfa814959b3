/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * A program that calls CRYPTO_set_mem_functions() itself
 * (test/helpers/ossl_probe setmem, which then generates and PEM-encodes an
 * Ed25519 key): in mode all the call is refused (0, as OpenSSL answers
 * once it has allocated) with a warning, and OpenSSL's blocks stay in
 * secret memory; in mode secure the program's functions are used, and
 * every block reaches the program's free() cleared.  Without the module
 * the same program sees blocks freed with their content (the control).
 */
#include <stdio.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static const char *run(const char *mode)
{
	static char log[300];
	const char *args[] = { "setmem", NULL };

	snprintf(log, sizeof(log), "%s/setmem-%s.log", rig_tmpdir(), mode ? mode : "none");
	int rc = probe_run(mode, NULL, 0, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode ? mode : "none", rc);
	return log;
}

int main(void)
{
	const char *log;

	probe_path();
	log = run(NULL);
	TL_CHECK(rig_file_has(log, "set_mem_functions: 1") && !rig_file_has(log, "content left: 0"),
		 "control: the program's free() should see blocks with content");
	tl_need_secretmem();
	log = run("all");
	TL_CHECK(rig_file_has(log, "set_mem_functions: 0"), "mode all: the program's functions were accepted");
	TL_CHECK(rig_file_has(log, "OPENSSL_malloc secret: 1") && rig_file_has(log, "program allocations: no"),
		 "mode all: OpenSSL's memory left secret memory");
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning: SECRETMEM_OPENSSL=all: the program called "
				     "CRYPTO_set_mem_functions(); refused") == 1, "mode all: no precise warning");
	log = run("secure");
	TL_CHECK(rig_file_has(log, "set_mem_functions: 1") && rig_file_has(log, "program allocations: yes"),
		 "mode secure: the program's functions were not used");
	TL_CHECK(rig_file_has(log, "program frees with content left: 0"),
		 "mode secure: blocks reached the program's free() uncleared");
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"), "mode secure: unexpected warning");
	printf("CRYPTO_set_mem_functions() of the program: refused in all, cleared in secure\n");
	return 0;
}
