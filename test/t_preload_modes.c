/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Modes and the programs the module meets:
 *  - a program that does not use OpenSSL runs unchanged in every mode: same
 *    output, no message, no secret memory;
 *  - an invalid SECRETMEM_OPENSSL gives exactly one warning and mode secure;
 *  - mode off changes nothing: OpenSSL's secure heap stays OpenSSL's (no
 *    secret memory in a program that uses it);
 *  - a program that loads libcrypto late with dlopen(RTLD_LOCAL) (Python's
 *    ssl module): its secure heap is still secret memory, without a warning
 *    (mode all is installed in full: t_preload_dlopen).
 */
#include <stdio.h>
#include <string.h>
#include "scan.h"
#include "tlib.h"

static const char *preload;

/* Run sh -c cmd with the module in mode; output into the file out. */
static int with_module(const char *mode, const char *cmd, const char *out)
{
	return rig_sh("LD_PRELOAD='%s' ASAN_OPTIONS=detect_leaks=0 SECRETMEM_OPENSSL='%s' sh -c '%s' > '%s' 2>&1",
		      preload, mode, cmd, out);
}

static void no_openssl(const char *mode)
{
	char out[300];

	snprintf(out, sizeof(out), "%s/plain-%s.out", rig_tmpdir(), mode);
	int st = with_module(mode, "echo hello; grep -c \"/secretmem (deleted)\" /proc/self/maps; exit 3", out);
	rig_cat(out);
	TL_CHECK(st == 3, "exit status %d, want 3", st);
	TL_CHECK(rig_file_count(out, "") == 2 && rig_file_has(out, "hello") && rig_file_count(out, "0") == 1,
		 "a program without OpenSSL did not run unchanged (mode %s)", mode);
}

static const char *python(void)
{
	if (rig_sh("command -v python3 >/dev/null 2>&1") != 0)
		return NULL;
	/* Only meaningful when ssl is an extension module that dlopen()s libssl. */
	if (rig_sh("python3 -c 'import _ssl, sys; sys.exit(0 if _ssl.__file__.endswith(\".so\") else 1)' "
		   ">/dev/null 2>&1") != 0)
		return NULL;
	return "python3";
}

static void late_libcrypto(const char *mode, int want_secret, int want_warnings)
{
	char out[300], cmd[1200];

	snprintf(out, sizeof(out), "%s/python-%s.out", rig_tmpdir(), mode);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c \"import ssl; c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); "
		 "c.load_cert_chain(\\\"%s\\\", \\\"%s\\\"); "
		 "print(\\\"secret\\\", open(\\\"/proc/self/maps\\\").read().count(\\\"/secretmem (deleted)\\\") > 0)\"",
		 rig_cert("rsa"), rig_make_key("rsa"));
	int st = with_module(mode, cmd, out);
	rig_cat(out);
	TL_CHECK(st == 0, "python3 failed (mode %s)", mode);
	TL_CHECK(rig_file_has(out, want_secret ? "secret True" : "secret False"),
		 "python3 (mode %s): secret memory %s expected", mode, want_secret ? "" : "not");
	TL_CHECK(rig_file_count(out, "secretmem-preload: warning") == want_warnings,
		 "python3 (mode %s): want %d warnings", mode, want_warnings);
}

int main(void)
{
	char out[300];
	int st;

	rig_need("openssl");
	preload = rig_ld_preload();
	no_openssl("secure");
	no_openssl("all");
	no_openssl("off");

	/* Invalid value: one warning, then mode secure (the secure heap is secret). */
	rig_make_key("rsa");
	snprintf(out, sizeof(out), "%s/invalid.out", rig_tmpdir());
	st = rig_sh("LD_PRELOAD='%s' ASAN_OPTIONS=detect_leaks=0 SECRETMEM_OPENSSL=bogus "
		    "openssl pkey -in '%s' -noout -check > '%s' 2>&1", preload, rig_make_key("rsa"), out);
	rig_cat(out);
	TL_CHECK(st == 0, "openssl pkey failed with an invalid mode");
	TL_CHECK(rig_file_count(out, "secretmem-preload: warning: invalid value of SECRETMEM_OPENSSL") == 1 &&
		 rig_file_count(out, "secretmem-preload") == 1, "want exactly one warning");

	tl_need_secretmem();
	if (!python()) {
		printf("python3 with a dynamic ssl module not found: dlopen case not checked\n");
	} else {
		late_libcrypto("secure", 1, 0);
		late_libcrypto("all", 1, 0);
		late_libcrypto("off", 0, 0);
	}
	printf("modes: plain programs unchanged, invalid value warned once, off inert, late libcrypto covered\n");
	return 0;
}
