/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * Keys a program writes to a file are not left behind in its heap.
 * `openssl genrsa -out`, `openssl pkey -out` and `openssl genpkey
 * -algorithm ed25519 -out` run under gdb, stopped when they reach
 * exit_group (`catch syscall exit_group`): everything is written and
 * freed, nothing is unmapped yet.  A root process then reads every readable
 * region through /proc/PID/mem and looks for the key they wrote (its
 * numbers in both byte orders, the raw Ed25519 key, the PEM text).
 * Without the module (control) the PEM text is found in freed stdio
 * buffers; in modes secure and all nothing is found: the module's fclose()
 * flushes the output and then clears the buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "scan.h"
#include "tlib.h"

static int run(const char *what, const char *mode)
{
	const char *dir = rig_tmpdir(), *m = mode ? mode : "none";
	char cmds[300], log[300], ready[300], go[300], outkey[300], label[80];
	struct scan_key key;
	struct scan_result res;
	FILE *f;
	int pid = 0, n, pem = -1;

	snprintf(cmds, sizeof(cmds), "%s/gdb-%s-%s.cmd", dir, what, m);
	snprintf(log, sizeof(log), "%s/gdb-%s-%s.log", dir, what, m);
	snprintf(ready, sizeof(ready), "%s/ready-%s-%s", dir, what, m);
	snprintf(go, sizeof(go), "%s/go-%s-%s", dir, what, m);
	snprintf(outkey, sizeof(outkey), "%s/out-%s-%s.pem", dir, what, m);
	f = fopen(cmds, "we");
	if (!f)
		TL_FAIL("%s: %s", cmds, strerror(errno));
	fprintf(f, "set startup-with-shell off\nset pagination off\nset confirm off\n");
	if (mode)
		fprintf(f, "set environment LD_PRELOAD=%s\nset environment SECRETMEM_OPENSSL=%s\n"
			   "set environment ASAN_OPTIONS=detect_leaks=0\n", rig_ld_preload(), mode);
	fprintf(f, "catch syscall exit_group\nrun\ninfo proc\nshell touch '%s'\n"
		   "shell while [ ! -e '%s' ]; do sleep 0.05; done\nkill\nquit\n", ready, go);
	fclose(f);

	char *genrsa[] = { "openssl", "genrsa", "-out", outkey, "2048", NULL };
	char *pkey[] = { "openssl", "pkey", "-in", (char *)(uintptr_t)rig_make_key("rsa"), "-out", outkey, NULL };
	char *genpkey[] = { "openssl", "genpkey", "-algorithm", "ed25519", "-out", outkey, NULL };
	char **prog = strcmp(what, "genrsa") == 0 ? genrsa : strcmp(what, "pkey") == 0 ? pkey : genpkey;
	char *argv[16] = { "gdb", "-nx", "-batch", "-x", cmds, "--args" };
	int a = 6;
	for (int i = 0; prog[i]; i++)
		argv[a++] = prog[i];
	argv[a] = NULL;
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
	if (access(ready, F_OK) != 0 || pid <= 0 || !rig_file_has(log, "exit_group")) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: did not stop at exit_group under gdb", what, m);
	}
	if (scan_key_load(&key, outkey) != 0)
		TL_FAIL("%s, mode %s: cannot read the key it wrote", what, m);
	snprintf(label, sizeof(label), "%s mode %s", what, m);
	n = scan_pid(&key, pid, &res, label);
	scan_report(&key, &res, label);
	TL_CHECK(n >= 0, "scan failed");
	for (int i = 0; i < key.count; i++)
		if (strcmp(key.needle[i].group, "pem") == 0)
			pem = i;
	if (!mode)
		TL_CHECK(pem >= 0 && scan_found(&res, pem) > 0,
			 "%s control: the PEM text of the written key was not found", what);
	if (mode && rig_preload_sanitizer()) /* see t_preload_pkeyutl */
		for (int i = 0; i < res.count; i++)
			if (strstr(res.copy[i].where, " [stack] ")) {
				fprintf(stderr, "%s: sanitizer build: copy on the stack not counted\n", label);
				n--;
			}
	if (rig_file_has(log, "secretmem-preload:")) {
		rig_cat(log);
		TL_FAIL("%s, mode %s: the preload module complained", what, m);
	}
	scan_result_free(&res);
	rig_sh("touch '%s'", go);
	rig_stop(gdb);
	scan_key_free(&key);
	return mode ? n : 0;
}

int main(void)
{
	static const char *const what[] = { "genrsa", "pkey", "genpkey" };
	int found = 0;

	rig_need("openssl");
	rig_skip_if_tsan();
	rig_need("gdb");
	for (int i = 0; i < 3; i++)
		run(what[i], NULL);
	tl_need_secretmem();
	for (int i = 0; i < 3; i++) {
		found += run(what[i], "secure");
		found += run(what[i], "all");
	}
	TL_CHECK(found == 0, "%d copies of written keys found (listed above)", found);
	printf("genrsa/pkey/genpkey -out: written key found without the module, nothing in secure and all\n");
	return 0;
}
