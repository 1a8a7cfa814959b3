/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * A python3 TLS server (Debian's /usr/bin/python3, the ssl module, its
 * libcrypto loaded by dlopen) holding an RSA-2048 or Ed25519 key, after it
 * served HTTPS requests (curl); a root process scans its memory.  Control
 * (no module): the key is found.  Heap mode (libsecretmem-heap.so preloaded
 * as `secretmem exec --mode heap` does; Python keeps pymalloc, whose arenas
 * the module gives): nothing outside the stack.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "heapscan.h"
#include "tlib.h"

#define PYTHON "/usr/bin/python3"

static const char server_py[] =
	"import socket, ssl, sys\n"
	"ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	"ctx.load_cert_chain(sys.argv[1], sys.argv[2])\n"
	"s = socket.socket()\n"
	"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', int(sys.argv[3])))\n"
	"s.listen(8)\n"
	"while True:\n"
	"    c, _ = s.accept()\n"
	"    try:\n"
	"        with ctx.wrap_socket(c, server_side=True) as t:\n"
	"            t.recv(4096)\n"
	"            t.sendall(b'HTTP/1.0 200 OK\\r\\n\\r\\npytls answered\\n')\n"
	"    except Exception as e:\n"
	"        print('error:', e, flush=True)\n";

static int run(const char *type, int heap)
{
	const char *dir = rig_tmpdir(), *m = heap ? "heap" : "plain";
	char script[300], log[300], portarg[16], label[80];
	struct scan_key key;
	struct heap_hits h;
	pid_t pid = -1;
	int port = 0;
	FILE *f;

	snprintf(script, sizeof(script), "%s/server.py", dir);
	f = fopen(script, "we");
	if (!f || fputs(server_py, f) < 0 || fclose(f) != 0)
		TL_FAIL("%s: %s", script, strerror(errno));
	snprintf(log, sizeof(log), "%s/pytls-%s-%s.log", dir, type, m);
	for (int attempt = 0; attempt < 3 && pid < 0; attempt++) {
		port = rig_free_port();
		snprintf(portarg, sizeof(portarg), "%d", port);
		char *argv[] = { PYTHON, script, (char *)(uintptr_t)rig_cert(type),
				 (char *)(uintptr_t)rig_make_key(type), portarg, NULL };
		pid = rig_spawn(argv, heap ? heap_env() : NULL, log, dir, 0);
		if (rig_wait_port(port, pid, 20000) != 0) {
			rig_stop(pid);
			pid = -1;
		}
	}
	if (pid < 0) {
		rig_cat(log);
		TL_FAIL("the python3 TLS server (%s, %s) did not start", type, m);
	}
	for (int i = 0; i < 3; i++)
		if (rig_sh("curl -sk --max-time 20 https://127.0.0.1:%d/ >> '%s' 2>&1", port, log) != 0) {
			rig_cat(log);
			TL_FAIL("curl to the python3 TLS server failed (%s, %s)", type, m);
		}
	TL_CHECK(rig_file_count(log, "pytls answered") == 3, "the python3 server did not answer every request");
	/* (the readiness probe's plain connection logs one "error: ... EOF") */
	TL_CHECK(!rig_file_has(log, "secretmem-heap:"), "python3 TLS server (%s, %s): the heap module warned", type, m);
	TL_CHECK(scan_key_load(&key, rig_make_key(type)) == 0, "cannot read the key");
	snprintf(label, sizeof(label), "python3 TLS server %s %s", type, m);
	h = heap_scan_pid(&key, pid, label, heap ? NULL : strcmp(type, "rsa") == 0 ? "d,p,q" : "ed25519", heap);
	if (heap) {
		struct heap_mem mem = heap_mem_of(pid);

		fprintf(stderr, "%s: secret %ld KiB, [heap] %ld KiB, other anonymous %ld KiB\n", label,
			mem.secret_kb, mem.heap_kb, mem.anon_kb);
	}
	scan_key_free(&key);
	rig_stop(pid);
	fprintf(stderr, "%s: %d copies outside the stack, %d on the stack\n", label, h.other, h.stack);
	return h.other;
}

int main(void)
{
	int found = 0;

	if (access(PYTHON, X_OK) != 0)
		tl_skip("no " PYTHON " (sh scripts/deps.sh test installs python3)");
	rig_need("openssl");
	rig_need("curl");
	run("rsa", 0);
	run("ed25519", 0);
	heap_need_module("t_heap_pytls");
	found += run("rsa", 1);
	found += run("ed25519", 1);
	TL_CHECK(found == 0, "heap mode: %d copies of the key found in the python3 TLS server (listed above)", found);
	printf("python3 TLS server: its key found without the module, nothing under heap mode (RSA, Ed25519)\n");
	return 0;
}
