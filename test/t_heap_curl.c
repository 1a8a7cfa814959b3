/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * curl with an RSA client key (`curl --cert --key`) against a local
 * `openssl s_server -Verify 1` (which asks for the client certificate).
 * curl runs under gdb and is stopped at SSL_free() after the request, while
 * the TLS context and the key still exist; a root process scans all of its
 * memory.  Control (no module): the key's d, p, q are found (OpenSSL's
 * BIGNUMs and libcurl's cached legacy RSA copy).  Heap mode
 * (libsecretmem-heap.so preloaded): nothing outside the stack.
 */
#include <stdint.h>
#include <stdio.h>
#include "heapscan.h"
#include "tlib.h"

static int run(int heap, int port)
{
	const char *m = heap ? "heap" : "plain";
	char url[64], label[64];
	struct scan_key key;
	struct gdbstop g;
	struct heap_hits h;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", port);
	TL_CHECK(scan_key_load(&key, rig_make_key("rsa")) == 0, "cannot read the key");
	char *prog[] = { "curl", "-sSk", "-o", "/dev/null", "--cert", (char *)(uintptr_t)rig_cert("rsa"), "--key",
			 (char *)(uintptr_t)rig_make_key("rsa"), url, NULL };
	heap_gdbstop_start(&g, "curl", heap, "break SSL_free", prog);
	snprintf(label, sizeof(label), "curl %s, at SSL_free", m);
	h = heap_scan_pid(&key, g.pid, label, heap ? NULL : "d,p,q", heap);
	TL_CHECK(!rig_file_has(g.log, "secretmem-heap:"), "curl %s: the heap module complained", m);
	gdbstop_end(&g);
	scan_key_free(&key);
	fprintf(stderr, "curl %s: %d copies outside the stack, %d on the stack\n", m, h.other, h.stack);
	return h.other;
}

int main(void)
{
	char log[300];
	int port;

	rig_need("openssl");
	rig_need("curl");
	rig_need("gdb");
	rig_make_key("rsa");
	snprintf(log, sizeof(log), "%s/s_server.log", rig_tmpdir());
	pid_t server = rig_s_server_verify("rsa", &port, log);
	run(0, port);
	heap_need_module("t_heap_curl");
	int found = run(1, port);
	rig_stop(server);
	TL_CHECK(found == 0, "heap mode: %d copies of the client key found in curl (listed above)", found);
	printf("curl with an RSA client key: found without the module, nothing under heap mode\n");
	return 0;
}
