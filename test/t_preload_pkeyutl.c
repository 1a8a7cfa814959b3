/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * The key of `openssl pkeyutl -sign`, scanned right after it was used: the
 * program runs under gdb with a breakpoint on BIO_write(), which pkeyutl
 * calls to write the signature it has just computed (the key is still
 * loaded).  While it is stopped there, a root process reads every readable
 * region through /proc/PID/mem.  Without the module (control) the scan must
 * find the RSA d, p, q and the Ed25519 key; in modes secure and all it must
 * find nothing - not even the key file's PEM text (an exception for the
 * stack in sanitizer builds is explained below).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

static int run(const char *type, const char *mode)
{
	const char *dir = rig_tmpdir(), *m = mode ? mode : "none";
	char cmds[300], log[300], ready[300], go[300], data[300], sig[300], label[80];
	struct scan_key key;
	struct scan_result res;
	FILE *f;
	int pid = 0, n;

	const char *keyp = rig_make_key(type);
	if (scan_key_load(&key, keyp) != 0)
		TL_FAIL("cannot read the key material of %s", keyp);
	snprintf(cmds, sizeof(cmds), "%s/gdb-%s-%s.cmd", dir, type, m);
	snprintf(log, sizeof(log), "%s/gdb-%s-%s.log", dir, type, m);
	snprintf(ready, sizeof(ready), "%s/ready-%s-%s", dir, type, m);
	snprintf(go, sizeof(go), "%s/go-%s-%s", dir, type, m);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(sig, sizeof(sig), "%s/sig-%s-%s", dir, type, m);
	if (rig_sh("head -c 32 /dev/urandom > '%s'", data) != 0)
		TL_FAIL("cannot write %s", data);
	f = fopen(cmds, "we");
	if (!f)
		TL_FAIL("%s: %s", cmds, strerror(errno));
	fprintf(f, "set startup-with-shell off\nset breakpoint pending on\nset pagination off\n"
		   "set confirm off\n");
	if (mode)
		fprintf(f, "set environment LD_PRELOAD=%s\nset environment SECRETMEM_OPENSSL=%s\n"
			   "set environment ASAN_OPTIONS=detect_leaks=0\n", rig_ld_preload(), mode);
	fprintf(f, "break BIO_write\nrun\ninfo proc\nshell touch '%s'\n"
		   "shell while [ ! -e '%s' ]; do sleep 0.05; done\nkill\nquit\n", ready, go);
	fclose(f);

	char *argv[] = { "gdb", "-nx", "-batch", "-x", cmds, "--args", "openssl", "pkeyutl", "-sign",
			 "-inkey", (char *)(uintptr_t)keyp, "-in", data, "-out", sig,
			 strcmp(type, "ed25519") == 0 ? "-rawin" : NULL, NULL };
	pid_t gdb = rig_spawn(argv, NULL, log, dir, 0);
	for (int i = 0; i < 3000 && access(ready, F_OK) != 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	f = fopen(log, "re");
	if (f) {
		char line[512];

		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "process %d", &pid) == 1)
				break;
		fclose(f);
	}
	if (access(ready, F_OK) != 0 || pid <= 0 || !rig_file_has(log, "Breakpoint 1, ")) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: pkeyutl did not stop at BIO_write under gdb", type, m);
	}
	if (rig_file_has(log, "secretmem-preload:")) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: the preload module complained", type, m);
	}
	snprintf(label, sizeof(label), "pkeyutl %s mode %s", type, m);
	n = scan_pid(&key, pid, &res, label);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	if (!mode && scan_all_required_found(&key, &res) != 0)
		TL_FAIL("%s control: the scanner did not find the key of pkeyutl", type);
	if (mode)
		TL_CHECK(res.secret_regions > 0, "%s, mode %s: no secret memory mapping", type, m);
	/*
	 * With a sanitizer-built module the sanitizer runtime is preloaded too and
	 * pkeyutl's stack is used differently: key bytes that OpenSSL left
	 * on its stack (neither mode covers the stack) were seen not yet
	 * overwritten there.  They are reported, and not counted, in that
	 * build only; a normal build counts every copy.
	 */
	if (mode && rig_preload_sanitizer())
		for (int i = 0; i < res.count; i++)
			if (strstr(res.copy[i].where, " [stack] ")) {
				fprintf(stderr, "%s: sanitizer build: copy on the stack not counted\n", label);
				n--;
			}
	scan_result_free(&res);
	rig_sh("touch '%s'", go);
	rig_stop(gdb);
	scan_key_free(&key);
	return mode ? n : 0;
}

int main(void)
{
	int found = 0;

	rig_need("openssl");
	rig_skip_if_tsan();
	rig_need("gdb");
	run("rsa", NULL);
	run("ed25519", NULL);
	tl_need_secretmem();
	found += run("rsa", "secure");
	found += run("ed25519", "secure");
	found += run("rsa", "all");
	found += run("ed25519", "all");
	TL_CHECK(found == 0, "%d copies of key material found in a protected pkeyutl (listed above)", found);
	printf("pkeyutl -sign: key found without the module, nothing found in modes secure and all\n");
	return 0;
}
