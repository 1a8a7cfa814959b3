/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * libcrypto loaded with dlopen() gets the chosen mode in full:
 *   - python3 (its ssl module dlopen()s libssl and libcrypto) under mode
 *     all: SECRETMEM_REPORT=1 shows libcrypto "loaded after start-up" with
 *     the memory functions installed, and no warning;
 *   - a python3 TLS server (RSA-2048 key) after a real handshake with
 *     s_client: a root process reading all its memory finds the key
 *     without the module (control) and nothing in modes all and secure;
 *   - two libcrypto copies in one process (libcrypto.so.3 and a copy of
 *     the file, both dlopen()ed RTLD_LOCAL): each has the module's memory
 *     functions, and in mode all CRYPTO_malloc() of each is secret memory;
 *   - the module's dlopen() keeps the caller's search path: a program whose
 *     DT_RUNPATH (or DT_RPATH) names a directory dlopen()s a library by a
 *     name found only there, with and without the module.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

#define PYTHON "/usr/bin/python3"

static const char server_py[] =
	"import socket, ssl, sys\n"
	"ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	"ctx.load_cert_chain(sys.argv[2], sys.argv[3])\n"
	"s = socket.socket()\n"
	"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	"s.bind(('127.0.0.1', int(sys.argv[1])))\n"
	"s.listen(5)\n"
	"while True:\n"
	"    c, _ = s.accept()\n"
	"    try:\n"
	"        t = ctx.wrap_socket(c, server_side=True)\n"
	"        t.recv(4096)\n"
	"        t.sendall(b'HTTP/1.0 200 OK\\r\\n\\r\\nCiphers supported in s_server binary\\n')\n"
	"        t.unwrap().close()\n"
	"    except Exception as e:\n"
	"        print('server:', e, flush=True)\n";

static int python_scan(const char *mode)
{
	const char *dir = rig_tmpdir(), *m = mode ? mode : "none";
	char script[300], log[300], portstr[16], label[64];
	struct scan_key key;
	struct scan_result res;
	FILE *f;

	snprintf(script, sizeof(script), "%s/server.py", dir);
	f = fopen(script, "we");
	TL_CHECK(f && fputs(server_py, f) >= 0 && fclose(f) == 0, "cannot write %s", script);
	TL_CHECK(scan_key_load(&key, rig_make_key("rsa")) == 0, "cannot read the key");
	int port = rig_free_port();
	snprintf(portstr, sizeof(portstr), "%d", port);
	snprintf(log, sizeof(log), "%s/python-%s.log", dir, m);
	char *argv[] = { PYTHON, script, portstr, (char *)(uintptr_t)rig_cert("rsa"),
			 (char *)(uintptr_t)rig_make_key("rsa"), NULL };
	pid_t pid = rig_spawn(argv, rig_env(mode), log, dir, 0);
	if (rig_wait_port(port, pid, 15000) != 0) {
		rig_cat(log);
		TL_FAIL("python3 server (mode %s) did not start", m);
	}
	if (rig_s_client(port, log) != 0) {
		rig_cat(log);
		TL_FAIL("python3 server (mode %s): handshake failed", m);
	}
	snprintf(label, sizeof(label), "python3 mode %s", m);
	int n = scan_pid(&key, pid, &res, label);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	if (!mode && scan_all_required_found(&key, &res) != 0)
		TL_FAIL("control: the scanner did not find the key in python3");
	if (mode)
		TL_CHECK(res.secret_regions > 0, "mode %s: python3 has no secret memory", m);
	scan_result_free(&res);
	rig_stop(pid);
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"), "mode %s: the module warned", m);
	scan_key_free(&key);
	return mode ? n : 0;
}

static void python_report(void)
{
	char log[300];

	snprintf(log, sizeof(log), "%s/python-report.log", rig_tmpdir());
	char *argv[] = { PYTHON, "-c", "import ssl; ssl.create_default_context(); print('ok')", NULL };
	const char *const *base = rig_env("all");
	const char *env[8];
	int k = 0;

	for (; base[k] && k < 6; k++)
		env[k] = base[k];
	env[k++] = "SECRETMEM_REPORT=1";
	env[k] = NULL;
	pid_t pid = rig_spawn(argv, env, log, rig_tmpdir(), 0);
	int st;
	TL_CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "python3 failed");
	rig_cat(log);
	TL_CHECK(rig_file_has(log, "(loaded after start-up): memory functions installed: every OPENSSL_malloc() "
				   "in secret memory"),
		 "python3, mode all: libcrypto did not get the full mode");
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"), "python3, mode all: a warning");
}

static void two_copies(const char *mode)
{
	char copy[300], log[300];

	snprintf(copy, sizeof(copy), "%s/libcrypto-copy.so.3", rig_tmpdir());
	if (access(copy, F_OK) != 0 &&
	    rig_sh("cp \"$(%s -c 'import ctypes.util; print(\"/usr/lib/x86_64-linux-gnu/\" + "
		   "ctypes.util.find_library(\"crypto\"))')\" '%s' 2>/dev/null || "
		   "cp \"$(ldconfig -p | sed -n 's/.*libcrypto.so.3 .*=> //p' | head -1)\" '%s'",
		   PYTHON, copy, copy) != 0)
		TL_FAIL("cannot copy libcrypto.so.3");
	snprintf(log, sizeof(log), "%s/twocopies-%s.log", rig_tmpdir(), mode);
	const char *args[] = { "twocopies", copy, NULL };
	int rc = probe_run(mode, "SECRETMEM_REPORT=1", 0, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed", mode);
	TL_CHECK(rig_file_has(log, "copy 0 memory functions: module") && rig_file_has(log, "copy 1 memory functions: module"),
		 "mode %s: a libcrypto copy without the module's memory functions", mode);
	if (strcmp(mode, "all") == 0)
		TL_CHECK(rig_file_has(log, "copy 0 CRYPTO_malloc secret: 1") &&
			 rig_file_has(log, "copy 1 CRYPTO_malloc secret: 1"),
			 "mode all: CRYPTO_malloc of a copy is not secret memory");
	TL_CHECK(rig_file_count(log, "secretmem-preload: report: libcrypto ") >= 2, "the report lists fewer than two copies");
}

static const char rp_lib[] = "int rp_answer(void) { return 42; }\n";
static const char rp_main[] =
	"#include <dlfcn.h>\n"
	"#include <stdio.h>\n"
	"int main(void)\n"
	"{\n"
	"	void *h = dlopen(\"librpt12.so\", RTLD_NOW);\n"
	"	int (*f)(void) = h ? (int (*)(void))dlsym(h, \"rp_answer\") : 0;\n"
	"	printf(\"answer %d\\n\", f ? f() : -1);\n"
	"	return f ? 0 : 1;\n"
	"}\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	TL_CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

static void caller_path(const char *tag)
{
	const char *dir = rig_tmpdir();
	char out[300], path[300];

	if (rig_preload_sanitizer()) {
		/* Its dlopen() interceptor comes first and is the caller we see. */
		printf("sanitizer runtime preloaded: caller search path not checked\n");
		return;
	}
	snprintf(out, sizeof(out), "%s/rpath-%s.out", dir, tag);
	snprintf(path, sizeof(path), "%s/rp", dir);
	rig_sh("mkdir -p '%s'", path);
	snprintf(path, sizeof(path), "%s/rp/l.c", dir);
	write_file(path, rp_lib);
	snprintf(path, sizeof(path), "%s/rp/m.c", dir);
	write_file(path, rp_main);
	if (rig_sh("cd '%s/rp' && cc -shared -fPIC -o librpt12.so l.c && cc -o m-%s m.c -ldl -Wl,%s "
		   "-Wl,-rpath,'%s/rp' 2>&1", dir, tag,
		   strcmp(tag, "runpath") == 0 ? "--enable-new-dtags" : "--disable-new-dtags", dir) != 0) {
		printf("cc not usable: caller search path not checked\n");
		return;
	}
	TL_CHECK(rig_sh("'%s/rp/m-%s' > '%s' 2>&1", dir, tag, out) == 0, "%s: fails without the module", tag);
	TL_CHECK(rig_sh("LD_PRELOAD='%s' ASAN_OPTIONS=detect_leaks=0 '%s/rp/m-%s' > '%s' 2>&1", rig_ld_preload(), dir,
			tag, out) == 0 && rig_file_has(out, "answer 42"),
		 "%s: dlopen() by name through the module lost the caller's search path", tag);
	printf("%s: dlopen() by name keeps the caller's search path\n", tag);
}

int main(void)
{
	int found = 0;

	rig_need("openssl");
	rig_need(PYTHON);
	rig_skip_if_tsan();
	probe_path();
	caller_path("runpath");
	caller_path("rpath");
	python_scan(NULL);
	tl_need_secretmem();
	python_report();
	two_copies("secure");
	two_copies("all");
	found += python_scan("all");
	found += python_scan("secure");
	TL_CHECK(found == 0, "%d copies of key material found in python3 (listed above)", found);
	printf("dlopen()ed libcrypto: full mode, two copies, nothing found in python3\n");
	return 0;
}
