/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Secret memory refused for want of a file descriptor (EMFILE: the process's
 * descriptor table full, so memfd_secret(2) fails): the module's one warning
 * names that cause, not the memory-lock limit or the kernel, and once
 * descriptors are free again the next request gets secret memory, with no
 * secret block freed in between.  Our OpenSSL program
 * (test/helpers/ossl_probe emfile) fills its table under the module:
 *   - modes secure and all: the refused blocks are ordinary memory, none of
 *     the ten after them is secret, the block after the descriptors are
 *     closed is;
 *   - SECRETMEM_REQUIRE=1: the refused blocks are NULL instead;
 *   - as root, also without CAP_IPC_LOCK under an 8 MiB RLIMIT_MEMLOCK (the
 *     limit the warning blamed).
 * The descriptor check keeps a record lock the program holds on a file
 * at descriptor 0 (a close of any descriptor of the file would drop it).
 * Needs no privilege: run as any user, it checks what that user gets.
 */
#include <stdio.h>
#include <unistd.h>
#include "probe.h"
#include "scan.h"
#include "tlib.h"

static void emfile(const char *mode, const char *extra, size_t memlock)
{
	char log[300];
	const char *args[] = { "emfile", NULL };
	int require = extra != NULL;

	snprintf(log, sizeof(log), "%s/emfile-%s-%d-%zu.log", rig_tmpdir(), mode, require, memlock);
	int rc = probe_run(mode, extra, memlock, log, args);
	rig_cat(log);
	TL_CHECK(rc == 0, "mode %s: the probe failed (%d)", mode, rc);
	TL_CHECK(rig_file_count(log, "secretmem-preload: warning") == 1 && !rig_file_has(log, "secretmem: warning"),
		 "mode %s: want exactly one warning", mode);
	TL_CHECK(rig_file_has(log, "refused 1024 bytes: no free file descriptor for memfd_secret(2)"),
		 "mode %s: the warning does not name the missing file descriptor", mode);
	TL_CHECK(rig_file_has(log, "until a file descriptor is free"), "mode %s: the warning's outcome", mode);
	TL_CHECK(!rig_file_has(log, "memory-lock limit") && !rig_file_has(log, "memory cgroup"),
		 "mode %s: the warning names a false cause", mode);
	TL_CHECK(rig_file_has(log, require ? "at EMFILE: 0 secret, then NULL" : "at EMFILE: 0 secret, then ordinary"),
		 "mode %s: the refused block is not %s", mode, require ? "NULL" : "ordinary memory");
	TL_CHECK(rig_file_has(log, require ? "still at EMFILE: 0 secret, 0 ordinary, 10 NULL"
					   : "still at EMFILE: 0 secret, 10 ordinary, 0 NULL"),
		 "mode %s: while the table is full", mode);
	TL_CHECK(rig_file_has(log, "record lock on descriptor 0 kept: yes"),
		 "mode %s: the descriptor check released the program's record lock", mode);
	TL_CHECK(rig_file_has(log, "after the descriptors were closed: secret"),
		 "mode %s: not secret memory again once descriptors are free", mode);
}

int main(void)
{
	probe_path();
	tl_need_secretmem();
	emfile("secure", NULL, 0);
	emfile("all", NULL, 0);
	emfile("secure", "SECRETMEM_REQUIRE=1", 0);
	if (geteuid() == 0) /* drops CAP_IPC_LOCK, sets RLIMIT_MEMLOCK */
		emfile("secure", NULL, 8u << 20);
	printf("at EMFILE the warning names the missing descriptor; secret memory is used again once one is free\n");
	return 0;
}
