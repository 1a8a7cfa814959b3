/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * curl with an RSA client key (`curl --cert --key`) against a local
 * `openssl s_server -Verify 1`: libcurl calls EVP_PKEY_get1_RSA(), and
 * OpenSSL 3 builds a cached legacy RSA from the key's parameters
 * (OSSL_PARAM_get_BN) that lives as long as the TLS context.  curl runs
 * under gdb and is stopped at SSL_free() after the request (the context
 * and the key still exist); a root process reads all its memory.  Without
 * the module (control) the key's numbers are found; in mode secure (and
 * all) nothing is: the module's OSSL_PARAM_get_BN() makes those copies
 * secure BIGNUMs.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "gdbstop.h"
#include "scan.h"
#include "tlib.h"

static int run(const char *mode, int port)
{
	const char *m = mode ? mode : "none";
	char url[64], label[64];
	struct scan_key key;
	struct scan_result res;
	struct gdbstop g;
	int n;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", port);
	TL_CHECK(scan_key_load(&key, rig_make_key("rsa")) == 0, "cannot read the key");
	char *prog[] = { "curl", "-sSk", "-o", "/dev/null", "--cert", (char *)(uintptr_t)rig_cert("rsa"), "--key",
			 (char *)(uintptr_t)rig_make_key("rsa"), url, NULL };
	gdbstop_start(&g, "curl", mode, "break SSL_free", prog);
	snprintf(label, sizeof(label), "curl mode %s", m);
	n = scan_pid(&key, g.pid, &res, label);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	if (!mode && scan_all_required_found(&key, &res) != 0)
		TL_FAIL("control: the scanner did not find the client key in curl");
	if (mode)
		TL_CHECK(res.secret_regions > 0, "mode %s: curl has no secret memory", m);
	if (mode && rig_preload_sanitizer()) /* see t_preload_pkeyutl */
		for (int i = 0; i < res.count; i++)
			if (strstr(res.copy[i].where, " [stack] "))
				n--;
	TL_CHECK(!rig_file_has(g.log, "secretmem-preload:"), "mode %s: the module complained", m);
	scan_result_free(&res);
	gdbstop_end(&g);
	scan_key_free(&key);
	return mode ? n : 0;
}

int main(void)
{
	char log[300];
	int port, found = 0;

	rig_need("openssl");
	rig_need("curl");
	rig_need("gdb");
	rig_skip_if_tsan();
	if (rig_preload_sanitizer())
		tl_skip("module built with a sanitizer: curl hangs in setlocale() with the sanitizer runtime "
			"preloaded, even without the module");
	rig_make_key("rsa");
	snprintf(log, sizeof(log), "%s/s_server.log", rig_tmpdir());
	pid_t server = rig_s_server_verify("rsa", &port, log);
	run(NULL, port);
	tl_need_secretmem();
	found += run("secure", port);
	found += run("all", port);
	rig_stop(server);
	TL_CHECK(found == 0, "%d copies of the client key found in curl (listed above)", found);
	printf("curl with an RSA client key: found without the module, nothing in secure and all\n");
	return 0;
}
