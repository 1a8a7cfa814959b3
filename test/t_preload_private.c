/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_preload_private - OpenSSL the preload module cannot reach
 * (secretmem-preload(7), OUT OF REACH), as pip's cryptography wheel links
 * it: a shared object of ours linked with libcrypto.a, its symbols hidden,
 * that loads an RSA key and signs with it.
 *   - Under modes secure and all the module prints one warning naming the
 *     object and suggesting heap mode; a root scan finds the key's numbers
 *     exactly as without the module (the warning is no false alarm);
 *     `secretmem status` lists the process as unprotected with the object
 *     (text and --json); SECRETMEM_REPORT=1 prints it at exit.  Before the
 *     module looked, it said nothing and the scan found the key all the
 *     same.
 *   - Under heap mode (secretmem exec --mode heap) the scan finds nothing.
 *   - A program linked with libcrypto.a and -rdynamic defines
 *     CRYPTO_secure_malloc ahead of the module: the module is inactive,
 *     says so once (and nothing about copies out of reach), and status and
 *     the report say it too.
 *     The same for a library exporting OpenSSL earlier in LD_PRELOAD.
 *   - No false alarm: openssl(1) and python3's ssl module (the system's
 *     libcrypto.so.3) give no warning.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

static const char lib_src[] =
	"#include <stdio.h>\n#include <openssl/evp.h>\n#include <openssl/pem.h>\n"
	"static EVP_PKEY *held;\n"
	"__attribute__((visibility(\"default\"))) int priv_load(const char *path) {\n"
	"  BIO *b = BIO_new_file(path, \"r\"); if (!b) return -1;\n"
	"  held = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL); BIO_free(b); if (!held) return -1;\n"
	"  EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(held, NULL); unsigned char sig[512], md[32] = { 1 };\n"
	"  size_t sl = sizeof sig;\n"
	"  int ok = c && EVP_PKEY_sign_init(c) > 0 && EVP_PKEY_sign(c, sig, &sl, md, sizeof md) > 0;\n"
	"  EVP_PKEY_CTX_free(c); return ok ? 0 : -1; }\n"
	"#ifdef PROGRAM\n#include <unistd.h>\n"
	"int main(int argc, char **argv) { if (priv_load(argv[1])) return 2;\n"
	"  printf(\"ready\\n\"); fflush(stdout); if (argc > 2) pause(); return 0; }\n#endif\n";

static char tool[PATH_MAX], self[PATH_MAX], libpath[PATH_MAX], prog[PATH_MAX];

/* The host of the library: this program, "hold LIB KEY [wait]". */
static int hold(const char *lib, const char *key, int wait)
{
	void *h = dlopen(lib, RTLD_NOW);
	int (*load)(const char *) = h ? (int (*)(const char *))dlsym(h, "priv_load") : NULL;

	if (!load || load(key) != 0) {
		printf("cannot load the key through %s\n", lib);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	if (wait)
		pause();
	return 0;
}

/* Scan pid for the key: the number of copies; control: all must be found. */
static int scan(pid_t pid, const char *label, int control)
{
	struct scan_key key;
	struct scan_result res;

	TL_CHECK(scan_key_load(&key, rig_make_key("rsa")) == 0, "cannot read the key");
	int n = scan_pid(&key, pid, &res, NULL);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	if (control)
		TL_CHECK(scan_all_required_found(&key, &res) == 0, "%s: the key is not all there", label);
	scan_result_free(&res);
	scan_key_free(&key);
	return n;
}

/* status text and --json for pid: the unprotected reason must be want. */
static void status_says(pid_t pid, const char *want, const char *dir)
{
	char text[PATH_MAX], json[PATH_MAX], line[1200];

	snprintf(text, sizeof(text), "%s/status.txt", dir);
	snprintf(json, sizeof(json), "%s/status.json", dir);
	TL_CHECK(rig_sh("'%s' status > '%s' && '%s' status --json > '%s'", tool, text, tool, json) == 0, "status");
	snprintf(line, sizeof(line), "unprotected: %d ", (int)pid);
	if (!rig_file_has(text, line) || !rig_file_has(text, want)) {
		rig_cat(text);
		TL_FAIL("status text: want \"%s\" and \"%s\"", line, want);
	}
	TL_CHECK(rig_sh("python3 test/cli_json.py status '%s'", json) == 0, "status --json rejected");
	char wfile[PATH_MAX];
	snprintf(wfile, sizeof(wfile), "%s/want.txt", dir);
	FILE *f = fopen(wfile, "w");
	TL_CHECK(f && fputs(want, f) >= 0 && fclose(f) == 0, "cannot write %s", wfile);
	TL_CHECK(rig_sh("python3 - '%s' %d '%s' <<'EOF'\n"
			"import json, sys\n"
			"d = json.load(open(sys.argv[1]))\n"
			"u = [x for x in d['unprotected'] if x['pid'] == int(sys.argv[2])]\n"
			"assert u and u[0]['reason'] == open(sys.argv[3]).read(), u\n"
			"EOF", json, (int)pid, wfile) == 0, "status --json: want the reason %s", want);
}

int main(int argc, char **argv)
{
	char log[PATH_MAX], want[3 * PATH_MAX], pre[PATH_MAX + 16];

	if (argc > 3 && strcmp(argv[1], "hold") == 0)
		return hold(argv[2], argv[3], argc > 4);
	tl_need_secretmem();
	tl_need_root("reads the memory and the figures page of another process");
	rig_skip_if_tsan();
	rig_need("openssl");
	rig_need("python3");
	const char *module = rig_preload();
	if (rig_preload_sanitizer())
		tl_skip("a sanitizer build: the programs here are not instrumented");
	TL_CHECK(realpath(tl_build_path("secretmem"), tool) && realpath(argv[0], self), "paths");
	const char *dir = rig_tmpdir();
	const char *key = rig_make_key("rsa");
	snprintf(log, sizeof(log), "%s/run.log", dir);
	snprintf(libpath, sizeof(libpath), "%s/libpriv.so", dir);
	snprintf(prog, sizeof(prog), "%s/privprog", dir);
	if (rig_sh("cd '%s' && cat > priv.c <<'EOF'\n%sEOF\n"
		   "cc -O1 -shared -fPIC -fvisibility=hidden -o libpriv.so priv.c -Wl,--exclude-libs,ALL -l:libcrypto.a "
		   "-lpthread -ldl && cc -O1 -DPROGRAM -rdynamic -o privprog priv.c -l:libcrypto.a -lpthread -ldl && "
		   "cc -O1 -shared -fPIC -o libexp.so priv.c -Wl,--whole-archive -l:libcrypto.a -Wl,--no-whole-archive "
		   "-lpthread -ldl",
		   dir, lib_src) != 0)
		tl_skip("cannot link libcrypto.a (Debian package libssl-dev)");

	/* the control: no module */
	char *hv[] = { self, "hold", libpath, (char *)(uintptr_t)key, "wait", NULL };
	pid_t pid = rig_spawn_ready(hv, NULL, log);
	scan(pid, "plain", 1);
	rig_stop(pid);

	/* modes secure and all: one warning, the key all there, status */
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", module);
	snprintf(want, sizeof(want), "secretmem-preload: warning: %s has its own copy of OpenSSL, which the module "
		 "cannot reach (it is not libcrypto.so): its keys stay in ordinary memory; secretmem exec --mode heap "
		 "covers it", libpath);
	static const char *const modes[] = { "SECRETMEM_OPENSSL=secure", "SECRETMEM_OPENSSL=all" };
	for (int m = 0; m < 2; m++) {
		const char *env[] = { pre, modes[m], NULL };
		pid = rig_spawn_ready(hv, env, log);
		scan(pid, modes[m], 1);
		TL_CHECK(rig_file_count(log, want) == 1, "%s: want one line %s", modes[m], want);
		char reason[2 * PATH_MAX];
		snprintf(reason, sizeof(reason), "OpenSSL out of the preload module's reach in %s (heap mode covers it)",
			 libpath);
		status_says(pid, reason, dir);
		rig_stop(pid);
	}
	/* the report at exit */
	TL_CHECK(rig_sh("LD_PRELOAD='%s' SECRETMEM_REPORT=1 '%s' hold '%s' '%s' > '%s' 2>&1", module, self, libpath,
			key, log) == 0, "the report run failed");
	rig_cat(log);
	snprintf(want, sizeof(want), "secretmem-preload: report: OpenSSL in %s: out of the module's reach, nothing of "
		 "it protected (heap mode covers it)", libpath);
	TL_CHECK(rig_file_has(log, want), "--report: want %s", want);

	/* heap mode covers it */
	char *xv[] = { tool, "exec", "--mode", "heap", "--", self, "hold", libpath, (char *)(uintptr_t)key, "wait", NULL };
	pid = rig_spawn_ready(xv, NULL, log);
	int n = scan(pid, "heap mode", 0);
	rig_stop(pid);
	TL_CHECK(n == 0, "heap mode: %d copies of the key found", n);

	/* a program that exports OpenSSL itself: the module is inactive */
	char *pv[] = { prog, (char *)(uintptr_t)key, "wait", NULL };
	const char *env[] = { pre, NULL };
	pid = rig_spawn_ready(pv, env, log);
	rig_cat(log);
	snprintf(want, sizeof(want), "secretmem-preload: warning: inactive: %s defines CRYPTO_secure_malloc ahead of the "
		 "module: OpenSSL's secure heap is its own; nothing of it is protected", prog);
	TL_CHECK(rig_file_count(log, want) == 1 && !rig_file_has(log, "has its own copy"), "want one line %s", want);
	char reason[2 * PATH_MAX];
	snprintf(reason, sizeof(reason), "preload module inactive: %s defines CRYPTO_secure_malloc ahead of the module: "
		 "OpenSSL's secure heap is its own", prog);
	status_says(pid, reason, dir);
	rig_stop(pid);
	TL_CHECK(rig_sh("LD_PRELOAD='%s' SECRETMEM_REPORT=1 '%s' '%s' > '%s' 2>&1", module, prog, key, log) == 0,
		 "the program's report run");
	snprintf(want, sizeof(want), "secretmem-preload: report: inactive: %s defines CRYPTO_secure_malloc", prog);
	TL_CHECK(rig_file_has(log, want), "report: want %s", want);

	/* a library exporting OpenSSL, earlier in LD_PRELOAD: inactive too */
	char expath[PATH_MAX];
	snprintf(expath, sizeof(expath), "%s/libexp.so", dir);
	TL_CHECK(rig_sh("LD_PRELOAD='%s:%s' '%s' hold '%s' '%s' > '%s' 2>&1", expath, module, self, expath, key, log) == 0,
		 "the earlier LD_PRELOAD entry run");
	rig_cat(log);
	snprintf(want, sizeof(want), "secretmem-preload: warning: inactive: %s defines CRYPTO_secure_malloc ahead of the "
		 "module", expath);
	TL_CHECK(rig_file_count(log, want) == 1, "want one line %s", want);

	/* no false alarm with the system's libcrypto */
	TL_CHECK(rig_sh("LD_PRELOAD='%s' openssl version > '%s' 2>&1 && LD_PRELOAD='%s' python3 -c 'import ssl, hashlib' "
			">> '%s' 2>&1", module, log, module, log) == 0, "openssl/python3 under the module");
	rig_cat(log);
	TL_CHECK(!rig_file_has(log, "secretmem-preload: warning"), "a warning with the system's libcrypto");
	printf("pass\n");
	return 0;
}
