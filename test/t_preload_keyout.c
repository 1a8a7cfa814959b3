/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Keys a program writes to a file are not left behind in its heap.
 * `openssl genrsa -out`, `openssl pkey -out` and `openssl genpkey
 * -algorithm ed25519 -out` run under gdb, stopped when they reach
 * exit_group (`catch syscall exit_group`): everything is written and
 * freed, nothing is unmapped yet.  A root process then reads every readable
 * region through /proc/PID/mem and looks for the key they wrote (its
 * numbers in both byte orders, the raw Ed25519 key, the PEM text).
 * Without the module (control) the PEM text is found in freed stdio
 * buffers; in modes secure and all nothing is found: the module's fclose()
 * flushes the output and then clears the buffer.
 */
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include "gdbstop.h"
#include "scan.h"
#include "tlib.h"

static int run(const char *what, const char *mode)
{
	const char *m = mode ? mode : "none";
	char outkey[300], label[80];
	struct scan_key key;
	struct scan_result res;
	struct gdbstop g;
	int n, pem = -1;

	snprintf(outkey, sizeof(outkey), "%s/out-%s-%s.pem", rig_tmpdir(), what, m);
	char *genrsa[] = { "openssl", "genrsa", "-out", outkey, "2048", NULL };
	char *pkey[] = { "openssl", "pkey", "-in", (char *)(uintptr_t)rig_make_key("rsa"), "-out", outkey, NULL };
	char *genpkey[] = { "openssl", "genpkey", "-algorithm", "ed25519", "-out", outkey, NULL };
	char **prog = strcmp(what, "genrsa") == 0 ? genrsa : strcmp(what, "pkey") == 0 ? pkey : genpkey;
	gdbstop_start(&g, what, mode, "catch syscall exit_group", prog);
	if (scan_key_load(&key, outkey) != 0)
		TL_FAIL("%s, mode %s: cannot read the key it wrote", what, m);
	snprintf(label, sizeof(label), "%s mode %s", what, m);
	n = scan_pid(&key, g.pid, &res, label);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	for (int i = 0; i < key.count; i++)
		if (strcmp(key.needle[i].group, "pem") == 0)
			pem = i;
	if (!mode)
		TL_CHECK(pem >= 0 && scan_found(&res, pem) > 0,
			 "%s control: the PEM text of the written key was not found", what);
	if (mode && rig_preload_sanitizer()) /* see t_preload_pkeyutl */
		for (int i = 0; i < res.count; i++)
			if (strstr(res.copy[i].where, " [stack] ")) {
				fprintf(stderr, "%s: sanitizer build: copy on the stack not counted\n", label);
				n--;
			}
	if (rig_file_has(g.log, "secretmem-preload:")) {
		rig_cat(g.log);
		TL_FAIL("%s, mode %s: the preload module complained", what, m);
	}
	scan_result_free(&res);
	gdbstop_end(&g);
	scan_key_free(&key);
	return mode ? n : 0;
}

int main(void)
{
	static const char *const what[] = { "genrsa", "pkey", "genpkey" };
	int found = 0;

	rig_need("openssl");
	rig_skip_if_tsan();
	rig_need("gdb");
	for (int i = 0; i < 3; i++)
		run(what[i], NULL);
	tl_need_secretmem();
	for (int i = 0; i < 3; i++) {
		found += run(what[i], "secure");
		found += run(what[i], "all");
	}
	TL_CHECK(found == 0, "%d copies of written keys found (listed above)", found);
	printf("genrsa/pkey/genpkey -out: written key found without the module, nothing in secure and all\n");
	return 0;
}
