/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * nginx from Debian with a TLS server on 127.0.0.1, started through
 * `secretmem exec --mode all` (the preload module in LD_PRELOAD; the workers
 * are forked from the master, so they carry the module and copies of its
 * secret memory): master and workers serve HTTPS requests, and a scan of
 * every nginx process finds no private key material.  A control run without
 * the module must find the key in every process.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

static const char *nginx_bin(void)
{
	return access("/usr/sbin/nginx", X_OK) == 0 ? "/usr/sbin/nginx" : "nginx";
}

static void write_conf(const char *conf, const char *prefix, int port, const char *type)
{
	FILE *f = fopen(conf, "we");

	if (!f)
		TL_FAIL("%s: %s", conf, strerror(errno));
	fprintf(f,
		"daemon off;\nmaster_process on;\nworker_processes 2;\n"
		"pid %s/nginx.pid;\nerror_log %s/error.log info;\n"
		"events { worker_connections 64; }\n"
		"http {\n  access_log off;\n"
		"  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n"
		"  fastcgi_temp_path %s/fastcgi;\n  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n"
		"  server {\n    listen 127.0.0.1:%d ssl;\n"
		"    ssl_certificate %s;\n    ssl_certificate_key %s;\n"
		"    location / { return 200 \"secretmem nginx test\\n\"; }\n  }\n}\n",
		prefix, prefix, prefix, prefix, prefix, prefix, prefix, port, rig_cert(type),
		rig_make_key(type));
	fclose(f);
}

/* Returns the copies found in all nginx processes. */
static int run(const char *type, const char *mode)
{
	const char *m = mode ? mode : "none";
	char prefix[300], conf[350], log[350], label[80], secretmem[PATH_MAX];
	struct scan_key key;
	int port = 0, found = 0;
	pid_t master = -1;

	snprintf(prefix, sizeof(prefix), "%s/nginx-%s-%s", rig_tmpdir(), type, m);
	snprintf(conf, sizeof(conf), "%s/nginx.conf", prefix);
	snprintf(log, sizeof(log), "%s/out.log", prefix);
	if (rig_sh("mkdir -p '%s'", prefix) != 0)
		TL_FAIL("mkdir %s", prefix);
	if (!realpath(tl_build_path("secretmem"), secretmem))
		TL_FAIL("the secretmem tool is not built");
	for (int attempt = 0; attempt < 3 && master < 0; attempt++) {
		port = rig_free_port();
		write_conf(conf, prefix, port, type);
		char *plain[] = { (char *)(uintptr_t)nginx_bin(), "-p", prefix, "-c", conf, NULL };
		char *exec[] = { secretmem, "exec", "--mode", (char *)(uintptr_t)m, "--",
				 (char *)(uintptr_t)nginx_bin(), "-p", prefix, "-c", conf, NULL };
		/* A sanitizer-built module needs the sanitizer runtime first in LD_PRELOAD,
		 * which `secretmem exec` does not arrange: set it directly. */
		if (mode && rig_preload_sanitizer())
			master = rig_spawn(plain, rig_env(mode), log, prefix, 0);
		else
			master = rig_spawn(mode ? exec : plain, NULL, log, prefix, 0);
		if (rig_wait_port(port, master, 10000) != 0) {
			rig_stop(master);
			master = -1;
		}
	}
	if (master < 0) {
		rig_cat(log);
		snprintf(log, sizeof(log), "%s/error.log", prefix);
		rig_cat(log);
		TL_FAIL("nginx (mode %s) did not start", m);
	}
	/* Several connections, so that both workers are likely to serve one. */
	for (int i = 0; i < 8; i++)
		if (rig_sh("curl -sk --max-time 10 https://127.0.0.1:%d/ >> '%s' 2>&1", port, log) != 0) {
			rig_cat(log);
			TL_FAIL("curl https://127.0.0.1:%d/ failed (mode %s)", port, m);
		}
	TL_CHECK(rig_file_count(log, "secretmem nginx test") == 8, "nginx did not answer every request");
	if (rig_sh("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 20 openssl s_client -connect 127.0.0.1:%d "
		   "-ign_eof >> '%s' 2>&1", port, log) != 0 || rig_file_count(log, "secretmem nginx test") != 9)
		TL_FAIL("openssl s_client to nginx failed (mode %s)", m);
	if (rig_file_has(log, "secretmem-preload:")) {
		rig_cat(log);
		TL_FAIL("the preload module complained (mode %s)", m);
	}

	if (scan_key_load(&key, rig_make_key(type)) != 0)
		TL_FAIL("cannot read the key material");
	pid_t procs[16];
	int np = 0;
	procs[np++] = master;
	np += rig_children(master, procs + 1, 15);
	TL_CHECK(np >= 3, "nginx has %d processes, expected a master and 2 workers", np);
	for (int i = 0; i < np; i++) {
		struct scan_result res;

		snprintf(label, sizeof(label), "nginx %s mode %s %s %d", type, m, i ? "worker" : "master",
			 (int)procs[i]);
		int n = scan_pid(&key, procs[i], &res, label);
		scan_report(&key, &res, label);
		TL_CHECK(n >= 0, "scan of %d failed", (int)procs[i]);
		if (!mode && scan_all_required_found(&key, &res) != 0)
			TL_FAIL("control: the scanner did not find the key in nginx process %d", (int)procs[i]);
		if (mode) {
			TL_CHECK(res.secret_regions > 0, "nginx process %d has no secret memory", (int)procs[i]);
			fprintf(stderr, "%s: secret memory %ld KiB\n", label, rig_secret_rss_kb(procs[i]));
		}
		found += n;
		scan_result_free(&res);
	}
	scan_key_free(&key);
	rig_stop(master);
	return mode ? found : 0;
}

int main(void)
{
	int found = 0;

	rig_need("openssl");
	rig_skip_if_tsan();
	rig_need("curl");
	rig_need(nginx_bin());
	if (access(tl_build_path("secretmem"), X_OK) != 0)
		tl_skip("the secretmem tool is not built");
	rig_make_key("rsa");
	rig_make_key("ed25519");
	run("rsa", NULL);
	tl_need_secretmem();
	found += run("rsa", "all");
	found += run("ed25519", "all");
	found += run("rsa", "secure");
	TL_CHECK(found == 0, "%d copies of key material found in nginx processes (listed above)", found);
	printf("nginx: master and workers served HTTPS; no key material in any process (modes all, secure)\n");
	return 0;
}
