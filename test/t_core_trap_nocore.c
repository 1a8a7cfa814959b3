/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_core_trap_nocore - a seccomp filter that TRAPs memfd_secret leaves no
 * core dump behind.
 *
 * The library makes the call in a short-lived child that shares the
 * program's memory; the filter's SIGSYS kills that child, and its default
 * action would dump core - the program's whole ordinary memory.  With the
 * core limit unlimited and a core_pattern that writes "core" files into the
 * current directory, a control child that crashes leaves a core file there
 * (else the test skips: it cannot see dumps), and a program whose
 * secretmem_supported() meets a TRAP filter must leave none.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "secretmem.h"
#include "tlib.h"

static int count_cores(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		if (strncmp(e->d_name, "core", 4) == 0)
			n++;
	closedir(d);
	return n;
}

static int crash(void *arg)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };

	if (chdir((const char *)arg) != 0 || setrlimit(RLIMIT_CORE, &inf) != 0)
		return 2;
	tl_signal_default(SIGSEGV);
	raise(SIGSEGV);
	return 3;
}

static int trapped(void *arg)
{
	struct rlimit inf = { RLIM_INFINITY, RLIM_INFINITY };

	if (chdir((const char *)arg) != 0 || setrlimit(RLIMIT_CORE, &inf) != 0)
		return 2;
	if (tl_seccomp_action(SYS_memfd_secret, SECCOMP_RET_TRAP) != 0)
		return 3;
	int rc = secretmem_supported();
	printf("secretmem_supported() under a TRAP filter: %d\n", rc);
	return rc == -EPERM ? 0 : 4;
}

int main(void)
{
	char dir[] = "/tmp/sm-nocore-XXXXXX", pattern[256] = "", out[1024];
	int st;

	if (tl_under_valgrind())
		tl_skip("under valgrind");
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");
	if (!f || !fgets(pattern, sizeof(pattern), f))
		tl_skip("cannot read core_pattern");
	fclose(f);
	if (strncmp(pattern, "core", 4) != 0)
		tl_skip("core_pattern does not write core files into the current directory");
	TL_CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	st = tl_run_child(crash, dir, out, sizeof(out));
	int control = count_cores(dir);
	tl_empty_dir(dir);
	if (control < 1) {
		rmdir(dir);
		tl_skip("a crashing control process left no core file here (core dumps disabled)");
	}
	st = tl_run_child(trapped, dir, out, sizeof(out));
	int n = count_cores(dir);
	tl_empty_dir(dir);
	rmdir(dir);
	printf("%s", out);
	TL_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "trapped child: %s", tl_status_str(st));
	TL_CHECK(n == 0, "%d core file(s) left by the library's helper child under a TRAP filter", n);
	printf("control: %d core file; under a TRAP filter: none\n", control);
	return 0;
}
