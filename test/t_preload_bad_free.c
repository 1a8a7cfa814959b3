/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Mode all (secretmem-preload(7)): OPENSSL_free() of a secret block that
 * was already freed, or OPENSSL_free()/OPENSSL_realloc() of a pointer inside
 * one, ends the program with the library's fixed line, for a small block and for a run of OpenSSL's TLS
 * record-buffer size (16712 bytes); the pointer never reaches libc's free().
 * (test/helpers/ossl_probe doublefree|interiorfree|interiorrealloc SIZE.)
 */
#include <stdio.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static void one(const char *how, const char *size, const char *msg)
{
	char log[300];
	const char *args[] = { how, size, NULL };

	snprintf(log, sizeof(log), "%s/%s-%s.log", rig_tmpdir(), how, size);
	int rc = probe_run("all", NULL, 0, log, args);
	rig_cat(log);
	TL_CHECK(!rig_file_has(log, "the bad OPENSSL_free() returned"), "%s, %s bytes: the free returned", how, size);
	TL_CHECK(rc == -1, "%s, %s bytes: the probe was not stopped by a signal (exit %d)", how, size, rc);
	TL_CHECK(rig_file_count(log, msg) == 1, "%s, %s bytes: no \"%s\" line", how, size, msg);
}

int main(void)
{
	probe_path();
	tl_need_secretmem();
	one("doublefree", "40", "secretmem: fatal: double free");
	one("doublefree", "16712", "secretmem: fatal: double free");
	one("interiorfree", "40", "secretmem: fatal: invalid pointer (not the start of a block)");
	one("interiorfree", "16712", "secretmem: fatal: invalid pointer (not the start of a block)");
	one("interiorrealloc", "40", "secretmem: fatal: invalid pointer (not the start of a block)");
	one("interiorrealloc", "16712", "secretmem: fatal: invalid pointer (not the start of a block)");
	printf("mode all: a double or interior OPENSSL_free() is the library's fatal error\n");
	return 0;
}
