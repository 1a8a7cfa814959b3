/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_cli_fake.c - `secretmem check` against fake kernels
 * (SECRETMEM_CHECK_FAKE_KERNEL, see secretmem(1)):
 *   plain: secret memory replaced by ordinary memfds - every case about
 *     secrecy must FAIL (or SKIP where the machine cannot run it), the
 *     verdict names the fake and the exit status is 1;
 *   charge-at-touch: the fault-time memory-lock regime our kernel lacks -
 *     memlock-touch and memlock PASS, memlock-selftest SKIPs, the
 *     environment names the fault-time regime;
 *   charge-at-touch-nosigbus / -uncharge: broken models of that regime -
 *     memlock-touch must FAIL, naming what is wrong;
 *   an unknown fake is a usage error (64).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "secretmem.h"
#include "cli_run.h"

static const char *fake;

static int pre_fake(void)
{
	setenv("SECRETMEM_CHECK_FAKE_KERNEL", fake, 1);
	return 0;
}

/* The result column of case name in the text output, "" if absent. */
static const char *result_of(const char *out, const char *name, char *line, size_t size)
{
	char key[64];
	snprintf(key, sizeof(key), "\n%-17s ", name);
	const char *p = strstr(out, key);
	if (!p) {
		line[0] = '\0';
		return line;
	}
	p += strlen(key);
	size_t n = strcspn(p, "\n");
	if (n >= size)
		n = size - 1;
	memcpy(line, p, n);
	line[n] = '\0';
	return line;
}

static void expect(const char *out, const char *name, const char *want, const char *text)
{
	char line[600];
	result_of(out, name, line, sizeof(line));
	TL_CHECK(strncmp(line, want, strlen(want)) == 0, "fake %s: case %s is '%s', expected %s",
		 fake, name, line, want);
	if (text)
		TL_CHECK(strstr(line, text) != NULL, "fake %s: case %s lacks '%s': %s", fake, name,
			 text, line);
}

int main(void)
{
	static char out[1 << 16];
	char *args[] = { NULL, "check", NULL };
	int st;

	tl_need_secretmem();
	if (geteuid() != 0)
		tl_skip("needs root (the cases drop capabilities and use /proc of other processes)");

	/* plain: a case run against ordinary memory must FAIL */
	fake = "plain";
	st = run_cli(args, out, sizeof(out), 0, pre_fake);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "fake plain: %s, expected exit 1",
		 tl_status_str(st));
	TL_CHECK(strncmp(out, "verdict: FAKE KERNEL (SECRETMEM_CHECK_FAKE_KERNEL=plain)", 56) == 0,
		 "fake plain: the verdict does not name the fake kernel");
	static const char *const must_fail[] = {
		"flags", "fd", "size", "mmap", "locking", "memlock", "memlock-selftest",
		"memlock-touch", "proc-mem", "process-vm-readv", "ptrace", "reopen", "vmsplice",
		"vmsplice-remap", "mremap", "madvise", "coredump", "exec",
	};
	for (size_t i = 0; i < sizeof(must_fail) / sizeof(must_fail[0]); i++)
		expect(out, must_fail[i], "FAIL", NULL);
	/* these depend on the machine (O_DIRECT directory, io_uring and
	 * userfaultfd sysctls, a memory cgroup): never PASS on ordinary memory */
	static const char *const never_pass[] = { "o-direct", "io-uring", "userfaultfd", "memcg" };
	char line[600];
	for (size_t i = 0; i < sizeof(never_pass) / sizeof(never_pass[0]); i++) {
		result_of(out, never_pass[i], line, sizeof(line));
		TL_CHECK(strncmp(line, "FAIL", 4) == 0 || strncmp(line, "SKIP", 4) == 0,
			 "fake plain: case %s is '%s' on ordinary memory", never_pass[i], line);
	}
	expect(out, "ptrace", "FAIL", "PTRACE_PEEKDATA read a word");
	expect(out, "reopen", "FAIL", "through /proc/PID/fd/N /proc/PID/map_files/<range>:");

	/* the fault-time regime, modelled */
	char *sel[] = { NULL, "check", "--case", "memlock", "--case", "memlock-selftest", "--case",
			"memlock-touch", NULL };
	fake = "charge-at-touch";
	st = run_cli(sel, out, sizeof(out), 0, pre_fake);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fake %s: %s", fake, tl_status_str(st));
	expect(out, "memlock-touch", "PASS", "the charge outlives munmap");
	expect(out, "memlock", "PASS", "fault-time regime");
	expect(out, "memlock-selftest", "SKIP", "fault-time regime");
	TL_CHECK(strstr(out, "\n  memory-lock regime   fault-time") != NULL,
		 "fake %s: the environment does not name the fault-time regime", fake);

	fake = "charge-at-touch-nosigbus";
	st = run_cli(sel, out, sizeof(out), 0, pre_fake);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "fake %s: %s", fake, tl_status_str(st));
	expect(out, "memlock-touch", "FAIL", "expected SIGBUS");
	expect(out, "memlock", "FAIL", "faulted in under a 64 KiB limit");

	fake = "charge-at-touch-uncharge";
	st = run_cli(sel, out, sizeof(out), 0, pre_fake);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "fake %s: %s", fake, tl_status_str(st));
	expect(out, "memlock-touch", "FAIL", "did not outlive munmap");

	fake = "bogus";
	st = run_cli(args, out, sizeof(out), 1, pre_fake);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 64, "fake bogus: %s, expected 64",
		 tl_status_str(st));
	return TL_PASS;
}
